//! The TCP connections of a process and the bytes moved on them.
//!
//! A process's sockets are its open files that are `socket:[inode]` (`/proc/<pid>/fd/*`).
//! For each, the bytes come from the kernel's socket diagnostics (netlink
//! `SOCK_DIAG_BY_FAMILY`, the interface of `ss -ti`: `tcp_info`'s `bytes_acked` and
//! `bytes_received`), asked about that one connection by its addresses: the supervisor takes a
//! duplicate of the socket from its process (`pidfd_getfd`, allowed for its own
//! descendants), reads its two addresses, closes it, and asks the kernel. A dump of every
//! connection instead costs a walk of the kernel's whole connection table (4 ms here, with
//! its 262,144 buckets; `/proc/net/tcp` costs twice that), which the sampler must not pay
//! every second. Where duplicating is refused (a sandbox, a kernel before 5.6), the dump is
//! read once per sample; where netlink is refused too, the connections are counted from
//! `/proc/net/tcp{,6}` and the bytes are unknown: a busy tool is then told by its CPU alone.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;

use rustix::process::{pidfd_getfd, pidfd_open, Pid, PidfdFlags, PidfdGetfdFlags};

/// Reads sockets for one sample: the netlink socket and, once needed, the dump.
#[derive(Debug, Default)]
pub(crate) struct TcpReader {
    diag: Option<Option<OwnedFd>>,
    /// The machine's connections by inode (the fallback), read at most once.
    table: Option<HashMap<u64, Option<u64>>>,
}

impl TcpReader {
    /// `pid`'s TCP connections and the bytes moved on them in all (`None`: unknown).
    pub(crate) fn of_process(&mut self, pid: i32) -> (u32, Option<u64>) {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return (0, None);
        };
        let sockets: Vec<(i32, u64)> = dir
            .flatten()
            .filter_map(|e| {
                let fd = e.file_name().to_str()?.parse::<i32>().ok()?;
                let link = std::fs::read_link(e.path()).ok()?;
                let inode = link
                    .to_str()?
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .parse::<u64>()
                    .ok()?;
                Some((fd, inode))
            })
            .collect();
        if sockets.is_empty() {
            return (0, Some(0));
        }
        let pidfd = Pid::from_raw(pid).and_then(|p| pidfd_open(p, PidfdFlags::empty()).ok());
        let (mut n, mut bytes, mut known) = (0u32, 0u64, true);
        for (fd, inode) in sockets {
            let one = pidfd
                .as_ref()
                .and_then(|p| self.by_address(p, fd))
                .unwrap_or_else(|| self.by_inode(inode));
            if let Some(b) = one {
                n += 1;
                match b {
                    Some(b) => bytes = bytes.saturating_add(b),
                    None => known = false,
                }
            }
        }
        (n, known.then_some(bytes))
    }

    /// One socket of a process, asked about by its addresses: `None` when it could not be
    /// duplicated (then the dump answers); `Some(None)` when it is no TCP connection;
    /// `Some(Some(bytes))` for one (`bytes` `None`: the kernel did not say).
    fn by_address(&mut self, pidfd: &OwnedFd, fd: i32) -> Option<Option<Option<u64>>> {
        use rustix::net::{getpeername, getsockname, sockopt, AddressFamily, SocketType};
        let sock = pidfd_getfd(pidfd, fd, PidfdGetfdFlags::empty()).ok()?;
        let tcp = matches!(
            sockopt::socket_domain(&sock),
            Ok(AddressFamily::INET | AddressFamily::INET6)
        ) && sockopt::socket_type(&sock) == Ok(SocketType::STREAM);
        if !tcp {
            return Some(None);
        }
        let (Ok(local), Ok(Some(peer))) = (getsockname(&sock), getpeername(&sock)) else {
            return Some(None); // listening, or not connected: no connection
        };
        drop(sock);
        let (Ok(local), Ok(peer)) = (SocketAddr::try_from(local), SocketAddr::try_from(peer))
        else {
            return Some(None);
        };
        let diag = self.diag.get_or_insert_with(|| diag::open().ok()).as_ref();
        Some(Some(
            diag.and_then(|d| diag::one(d, local, peer).ok().flatten()),
        ))
    }

    /// One socket, from the dump of every connection (read once).
    fn by_inode(&mut self, inode: u64) -> Option<Option<u64>> {
        let table = self
            .table
            .get_or_insert_with(|| diag::dump().unwrap_or_else(|_| proc_net()));
        table.get(&inode).copied()
    }
}

/// TCP connections by inode from `/proc/net/tcp` and `tcp6` (bytes unknown).
fn proc_net() -> HashMap<u64, Option<u64>> {
    let mut out = HashMap::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for line in text.lines().skip(1) {
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
            let cols: Vec<&str> = line.split_whitespace().collect();
            let listening = cols.get(3) == Some(&"0A");
            if let Some(inode) = cols.get(9).and_then(|i| i.parse::<u64>().ok()) {
                if inode != 0 && !listening {
                    out.insert(inode, None);
                }
            }
        }
    }
    out
}

/// The netlink socket diagnostics: one connection by its addresses, or a dump of all.
mod diag {
    use std::collections::HashMap;
    use std::net::SocketAddr;
    use std::os::fd::OwnedFd;

    use rustix::net::netlink::{SocketAddrNetlink, SOCK_DIAG};
    use rustix::net::{socket_with, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLM_F_REQUEST: u16 = 0x1;
    const NLM_F_DUMP: u16 = 0x300;
    const NLMSG_ERROR: u16 = 2;
    const NLMSG_DONE: u16 = 3;
    const AF_INET: u8 = 2;
    const AF_INET6: u8 = 10;
    const IPPROTO_TCP: u8 = 6;
    const INET_DIAG_INFO: u16 = 2;
    /// Every TCP state but LISTEN (10) and CLOSE (7): the connections.
    const CONNECTIONS: u32 = !((1 << 10) | (1 << 7));
    /// `struct inet_diag_msg`: family, state, timer, retrans (4), the socket id (48),
    /// expires, rqueue, wqueue, uid, inode (20).
    const DIAG_MSG: usize = 72;
    /// `struct tcp_info`: `tcpi_bytes_acked` and `tcpi_bytes_received` (Linux 4.1 and 4.2).
    const BYTES_ACKED: usize = 120;
    const BYTES_RECEIVED: usize = 128;

    fn u16_at(b: &[u8], i: usize) -> Option<u16> {
        Some(u16::from_ne_bytes(b.get(i..i + 2)?.try_into().ok()?))
    }
    fn u32_at(b: &[u8], i: usize) -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
    }
    fn u64_at(b: &[u8], i: usize) -> Option<u64> {
        Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
    }

    pub(super) fn open() -> std::io::Result<OwnedFd> {
        Ok(socket_with(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC,
            Some(SOCK_DIAG),
        )?)
    }

    /// A request for `family`'s TCP sockets: every connection (`dump`), or the one with
    /// these addresses.
    fn request(family: u8, seq: u32, one: Option<(SocketAddr, SocketAddr)>) -> [u8; 72] {
        let mut m = [0u8; 72];
        let flags = NLM_F_REQUEST | if one.is_none() { NLM_F_DUMP } else { 0 };
        m[0..4].copy_from_slice(&72u32.to_ne_bytes());
        m[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        m[6..8].copy_from_slice(&flags.to_ne_bytes());
        m[8..12].copy_from_slice(&seq.to_ne_bytes());
        // inet_diag_req_v2: family, protocol, ext (INET_DIAG_INFO), pad, states, then the
        // socket id: sport, dport (big-endian), src, dst (16 bytes each), if, cookie.
        m[16] = family;
        m[17] = IPPROTO_TCP;
        m[18] = 1 << (INET_DIAG_INFO - 1);
        m[20..24].copy_from_slice(&CONNECTIONS.to_ne_bytes());
        if let Some((local, peer)) = one {
            m[24..26].copy_from_slice(&local.port().to_be_bytes());
            m[26..28].copy_from_slice(&peer.port().to_be_bytes());
            let addr = |a: &SocketAddr| match a {
                SocketAddr::V4(v) => {
                    let mut b = [0u8; 16];
                    b[..4].copy_from_slice(&v.ip().octets());
                    b
                }
                SocketAddr::V6(v) => v.ip().octets(),
            };
            m[28..44].copy_from_slice(&addr(&local));
            m[44..60].copy_from_slice(&addr(&peer));
            // No cookie: INET_DIAG_NOCOOKIE.
            m[64..72].copy_from_slice(&[0xff; 8]);
        }
        m
    }

    /// The bytes moved on one socket, from the attributes after its `inet_diag_msg`.
    fn bytes_of(attrs: &[u8]) -> Option<u64> {
        let mut i = 0;
        while i + 4 <= attrs.len() {
            let len = u16_at(attrs, i)? as usize;
            let kind = u16_at(attrs, i + 2)?;
            if len < 4 || i + len > attrs.len() {
                return None;
            }
            if kind == INET_DIAG_INFO {
                let info = &attrs[i + 4..i + len];
                return Some(
                    u64_at(info, BYTES_ACKED)?.saturating_add(u64_at(info, BYTES_RECEIVED)?),
                );
            }
            i += (len + 3) & !3;
        }
        None
    }

    /// Send `req` and hand each answer (its inode and bytes) to `each` until the end.
    fn ask(
        fd: &OwnedFd,
        req: &[u8],
        each: &mut dyn FnMut(u64, Option<u64>),
    ) -> std::io::Result<()> {
        let kernel = SocketAddrNetlink::new(0, 0);
        rustix::net::sendto(fd, req, SendFlags::empty(), &kernel)?;
        let dump = u16_at(req, 6).unwrap_or(0) & NLM_F_DUMP != 0;
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            let (n, _) = rustix::net::recv(fd, &mut buf[..], RecvFlags::empty())?;
            if n == 0 {
                return Ok(());
            }
            let mut i = 0;
            while i + 16 <= n {
                let len = u32_at(&buf, i).unwrap_or(0) as usize;
                let kind = u16_at(&buf, i + 4).unwrap_or(NLMSG_DONE);
                if len < 16 || i + len > n {
                    return Ok(());
                }
                match kind {
                    NLMSG_DONE => return Ok(()),
                    NLMSG_ERROR => {
                        // An exact lookup that found nothing answers with an error too.
                        let errno = u32_at(&buf, i + 16).unwrap_or(0) as i32;
                        return match errno {
                            0 => Ok(()),
                            e => Err(std::io::Error::from_raw_os_error(-e)),
                        };
                    }
                    SOCK_DIAG_BY_FAMILY if len >= 16 + DIAG_MSG => {
                        let msg = &buf[i + 16..i + len];
                        if let Some(inode) = u32_at(msg, 68) {
                            each(u64::from(inode), bytes_of(&msg[DIAG_MSG..]));
                        }
                    }
                    _ => {}
                }
                i += (len + 3) & !3;
            }
            if !dump {
                return Ok(());
            }
        }
    }

    /// The connection from `local` to `peer`: the bytes moved on it (`Ok(None)`: the kernel
    /// did not say, or it is gone).
    pub(super) fn one(
        fd: &OwnedFd,
        local: SocketAddr,
        peer: SocketAddr,
    ) -> std::io::Result<Option<u64>> {
        let family = if local.is_ipv4() { AF_INET } else { AF_INET6 };
        let mut got = None;
        ask(fd, &request(family, 1, Some((local, peer))), &mut |_, b| {
            got = b
        })?;
        Ok(got)
    }

    /// Every TCP connection of this network namespace (IPv4 and IPv6) by inode, with the
    /// bytes moved on it.
    pub(super) fn dump() -> std::io::Result<HashMap<u64, Option<u64>>> {
        let fd = open()?;
        let mut out = HashMap::new();
        for (seq, family) in [(1u32, AF_INET), (2, AF_INET6)] {
            ask(&fd, &request(family, seq, None), &mut |inode, b| {
                out.insert(inode, b);
            })?;
        }
        Ok(out)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// A loopback connection that moved bytes: found by its addresses and in the dump,
        /// with at least those bytes, the same both ways.
        #[test]
        fn a_loopback_connection_shows_its_bytes() {
            use std::io::{Read, Write};
            use std::os::unix::fs::MetadataExt;
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (mut a, _) = l.accept().unwrap();
            c.write_all(&[7u8; 50_000]).unwrap();
            let mut got = vec![0u8; 50_000];
            a.read_exact(&mut got).unwrap();
            let fd = std::os::fd::AsRawFd::as_raw_fd(&c);
            let inode = std::fs::metadata(format!("/proc/self/fd/{fd}"))
                .unwrap()
                .ino();
            let table = dump().expect("socket diagnostics answer here");
            let dumped = table.get(&inode).copied().flatten().unwrap();
            assert!(dumped >= 50_000, "{dumped}");
            let diag = open().unwrap();
            let (local, peer) = (c.local_addr().unwrap(), c.peer_addr().unwrap());
            let asked = one(&diag, local, peer).unwrap().unwrap();
            assert_eq!(asked, dumped);
            // A connection that does not exist: no answer, no error.
            let nowhere: SocketAddr = "127.0.0.1:1".parse().unwrap();
            assert_eq!(one(&diag, nowhere, nowhere).ok().flatten(), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process's connections are found from its open files and read by their addresses;
    /// the fallbacks count the same connections.
    #[test]
    fn a_process_s_connections_are_counted() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut a, _) = l.accept().unwrap();
        c.write_all(&[1u8; 10_000]).unwrap();
        a.read_exact(&mut [0u8; 10_000]).unwrap();
        let me = std::process::id() as i32;
        let (n, bytes) = TcpReader::default().of_process(me);
        assert!(n >= 2, "both ends are ours: {n}");
        assert!(bytes.unwrap() >= 20_000, "{bytes:?}");
        // The dump answers the same.
        let mut by_dump = TcpReader::default();
        let counted: u32 = std::fs::read_dir(format!("/proc/{me}/fd"))
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter_map(|l| {
                l.to_str()?
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .parse::<u64>()
                    .ok()
            })
            .filter(|i| by_dump.by_inode(*i).is_some())
            .count() as u32;
        assert_eq!(counted, n);
        let fallback = proc_net();
        assert!(fallback.values().all(Option::is_none));
    }
}
