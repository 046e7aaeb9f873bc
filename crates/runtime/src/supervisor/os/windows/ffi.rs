//! The Windows calls the backend makes that the standard library does not offer: Job Objects,
//! other processes' times, memory and I/O, the threads of a suspended child, console control
//! events. Each `unsafe` block is one call in one small function, with what makes it sound;
//! everything above this file is safe code over [`Job`] and [`Process`].
#![allow(unsafe_code)]

use std::io;
use std::mem::{size_of, zeroed};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::Foundation::{
    FILETIME, HANDLE, INVALID_HANDLE_VALUE, STATUS_INFO_LENGTH_MISMATCH, WAIT_TIMEOUT,
};
use windows_sys::Win32::System::Console::{GenerateConsoleCtrlEvent, CTRL_BREAK_EVENT};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, Thread32First, Thread32Next,
    PROCESSENTRY32W, TH32CS_SNAPPROCESS, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectBasicProcessIdList, JobObjectExtendedLimitInformation, QueryInformationJobObject,
    SetInformationJobObject, TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::Threading::{
    GetProcessIoCounters, GetProcessTimes, OpenProcess, OpenThread, ResumeThread, TerminateProcess,
    WaitForSingleObject, IO_COUNTERS, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE,
    PROCESS_TERMINATE, THREAD_SUSPEND_RESUME,
};

/// A handle we own, from a call that returns null (or `INVALID_HANDLE_VALUE`) on failure.
fn owned(h: HANDLE) -> io::Result<OwnedHandle> {
    if h.is_null() || h == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `h` is a valid handle (checked above) that the call just opened for us and
    // that nothing else owns or closes: the `OwnedHandle` closes it once.
    Ok(unsafe { OwnedHandle::from_raw_handle(h as RawHandle) })
}

/// A `BOOL` result as an `io::Result`.
fn ok(b: i32) -> io::Result<()> {
    if b == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn raw(h: &OwnedHandle) -> HANDLE {
    h.as_raw_handle() as HANDLE
}

/// A FILETIME as one number of 100 ns intervals.
fn ticks(t: FILETIME) -> u64 {
    (u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)
}

/// A Job Object that kills its processes when its last handle closes (ours: when the host
/// ends, however it ends, the tree ends with it).
#[derive(Debug)]
pub(super) struct Job(OwnedHandle);

impl Job {
    /// A new, unnamed job with `KILL_ON_JOB_CLOSE`.
    pub(super) fn new() -> io::Result<Job> {
        let job = Job(create_job()?);
        // SAFETY: the structure is plain data, all zero is a valid value of it.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        job.set_limits(&limits)?;
        Ok(job)
    }

    fn set_limits(&self, limits: &JOBOBJECT_EXTENDED_LIMIT_INFORMATION) -> io::Result<()> {
        // SAFETY: `self.0` is a job handle we own; the pointer and size describe `limits`,
        // which outlives the call and is only read.
        ok(unsafe {
            SetInformationJobObject(
                raw(&self.0),
                JobObjectExtendedLimitInformation,
                (limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        })
    }

    /// From now on, closing the job leaves its processes running.
    pub(super) fn keep_members_on_close(&self) -> io::Result<()> {
        // SAFETY: the structure is plain data, all zero is a valid value of it (no limit).
        let limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { zeroed() };
        self.set_limits(&limits)
    }

    /// Put `process` (and so every process it starts from now on) in the job.
    pub(super) fn assign(&self, process: RawHandle) -> io::Result<()> {
        // SAFETY: both handles are valid for the call: the job's is ours, the process's is
        // the caller's open handle of its child (borrowed for the call).
        ok(unsafe { AssignProcessToJobObject(raw(&self.0), process as HANDLE) })
    }

    /// Terminate every process in the job, each with exit code `code`.
    pub(super) fn terminate(&self, code: u32) -> io::Result<()> {
        // SAFETY: a job handle we own.
        ok(unsafe { TerminateJobObject(raw(&self.0), code) })
    }

    /// How many processes of the job are still running: the job's own accounting, which
    /// confirms a kill (no exit message is counted).
    pub(super) fn active_processes(&self) -> io::Result<u32> {
        // SAFETY: plain data, all zero is valid.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { zeroed() };
        // SAFETY: a job handle we own; the pointer and size describe `info`, written by the
        // call only within that size.
        ok(unsafe {
            QueryInformationJobObject(
                raw(&self.0),
                JobObjectBasicAccountingInformation,
                (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        })?;
        Ok(info.ActiveProcesses)
    }

    /// The ids of the job's running processes (at most [`MAX_LISTED`]).
    pub(super) fn process_ids(&self) -> io::Result<Vec<u32>> {
        let mut list = Box::new(IdList {
            assigned: 0,
            listed: 0,
            ids: [0; MAX_LISTED],
        });
        // SAFETY: a job handle we own; the pointer and size describe `list`, laid out as
        // `JOBOBJECT_BASIC_PROCESS_ID_LIST` with room for `MAX_LISTED` ids; the call writes
        // within that size and says how many ids it wrote.
        ok(unsafe {
            QueryInformationJobObject(
                raw(&self.0),
                JobObjectBasicProcessIdList,
                (&mut *list as *mut IdList).cast(),
                size_of::<IdList>() as u32,
                std::ptr::null_mut(),
            )
        })?;
        let n = (list.listed as usize).min(MAX_LISTED);
        Ok(list.ids[..n].iter().map(|&id| id as u32).collect())
    }
}

/// The most process ids one reading of a job lists.
pub(super) const MAX_LISTED: usize = 4096;

/// `JOBOBJECT_BASIC_PROCESS_ID_LIST` with room for [`MAX_LISTED`] ids.
#[repr(C)]
struct IdList {
    assigned: u32,
    listed: u32,
    ids: [usize; MAX_LISTED],
}

fn create_job() -> io::Result<OwnedHandle> {
    // SAFETY: no security attributes and no name (both may be null): a private job.
    owned(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })
}

/// An open handle to another process: while it is open the process's id cannot name another
/// process, so what is read or done through it is about the process opened.
#[derive(Debug)]
pub(super) struct Process(OwnedHandle);

/// A process's times, in 100 ns intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Times {
    /// When it was created (since 1601): with the id, its identity.
    pub(super) created: u64,
    /// Kernel and user time, all its threads.
    pub(super) cpu: u64,
}

impl Process {
    /// Open process `pid` to read it (and, with `terminate`, to end it); `None` when it is
    /// gone or may not be opened.
    pub(super) fn open(pid: u32, terminate: bool) -> Option<Process> {
        let mut access = PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE;
        if terminate {
            access |= PROCESS_TERMINATE;
        }
        // SAFETY: no handle is passed in; the returned one is checked and owned.
        owned(unsafe { OpenProcess(access, 0, pid) })
            .ok()
            .map(Process)
    }

    /// Its creation and CPU times.
    pub(super) fn times(&self) -> Option<Times> {
        let z = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut created, mut exited, mut kernel, mut user) = (z, z, z, z);
        // SAFETY: a process handle we own, opened with query rights; four pointers to
        // locals the call fills.
        ok(unsafe {
            GetProcessTimes(
                raw(&self.0),
                &mut created,
                &mut exited,
                &mut kernel,
                &mut user,
            )
        })
        .ok()?;
        Some(Times {
            created: ticks(created),
            cpu: ticks(kernel).saturating_add(ticks(user)),
        })
    }

    /// Its working set (resident memory), in bytes.
    pub(super) fn working_set(&self) -> Option<u64> {
        // SAFETY: plain data, all zero is valid.
        let mut m: PROCESS_MEMORY_COUNTERS = unsafe { zeroed() };
        m.cb = size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
        // SAFETY: a process handle we own; the pointer and size describe `m`.
        ok(unsafe { K32GetProcessMemoryInfo(raw(&self.0), &mut m, m.cb) }).ok()?;
        Some(m.WorkingSetSize as u64)
    }

    /// The bytes it read and wrote, of every kind of I/O (files, pipes, sockets, devices).
    pub(super) fn io_bytes(&self) -> Option<u64> {
        // SAFETY: plain data, all zero is valid.
        let mut c: IO_COUNTERS = unsafe { zeroed() };
        // SAFETY: a process handle we own; a pointer to a local the call fills.
        ok(unsafe { GetProcessIoCounters(raw(&self.0), &mut c) }).ok()?;
        Some(
            c.ReadTransferCount
                .saturating_add(c.WriteTransferCount)
                .saturating_add(c.OtherTransferCount),
        )
    }

    /// Whether it is still running.
    pub(super) fn running(&self) -> bool {
        // SAFETY: a process handle we own, opened with `SYNCHRONIZE`; a zero timeout never
        // blocks.
        unsafe { WaitForSingleObject(raw(&self.0), 0) == WAIT_TIMEOUT }
    }

    /// End it with exit code `code`.
    pub(super) fn terminate(&self, code: u32) -> io::Result<()> {
        // SAFETY: a process handle we own; whether it was opened to terminate, the call says.
        ok(unsafe { TerminateProcess(raw(&self.0), code) })
    }

    /// Its command line as it was started (`None`: not readable; wine 8 does not answer this
    /// query, `STATUS_INVALID_INFO_CLASS`).
    pub(super) fn command_line(&self) -> Option<String> {
        let mut buf: Vec<u64> = vec![0; 512];
        for _ in 0..2 {
            let len = (buf.len() * 8) as u32;
            let mut needed = 0u32;
            let status = query_command_line(&self.0, &mut buf, &mut needed);
            if status == STATUS_INFO_LENGTH_MISMATCH && needed > len && needed < (1 << 20) {
                buf = vec![0; (needed as usize).div_ceil(8)];
                continue;
            }
            if status < 0 {
                return None;
            }
            return unicode_string(&buf);
        }
        None
    }
}

/// `NtQueryInformationProcess(ProcessCommandLineInformation)` into `buf` (8-byte aligned):
/// a `UNICODE_STRING` whose text follows it in the same buffer.
fn query_command_line(h: &OwnedHandle, buf: &mut [u64], needed: &mut u32) -> i32 {
    use windows_sys::Wdk::System::Threading::{
        NtQueryInformationProcess, ProcessCommandLineInformation,
    };
    // SAFETY: a process handle we own, opened with query rights; the pointer and size
    // describe `buf`, which the call writes within that size; `needed` is a local.
    unsafe {
        NtQueryInformationProcess(
            raw(h),
            ProcessCommandLineInformation,
            buf.as_mut_ptr().cast(),
            (buf.len() * 8) as u32,
            needed,
        )
    }
}

/// The text of the `UNICODE_STRING` at the start of `buf` (its length in bytes, then at
/// offset 8 the address of its text), if that text lies within `buf`: the call points into
/// the buffer it was given, and nothing else is ever read.
fn unicode_string(buf: &[u64]) -> Option<String> {
    let len = (*buf.first()? & 0xffff) as usize;
    let ptr = *buf.get(1)? as usize;
    let off = ptr.checked_sub(buf.as_ptr() as usize)?;
    let end = off.checked_add(len)?;
    if end > buf.len() * 8 || off % 2 != 0 {
        return None;
    }
    let byte = |i: usize| (buf[i / 8] >> ((i % 8) * 8)) as u8;
    let units: Vec<u16> = (off..end)
        .step_by(2)
        .map(|i| u16::from_le_bytes([byte(i), byte(i + 1)]))
        .collect();
    Some(String::from_utf16_lossy(&units))
}

/// Resume every thread of process `pid`, a child created suspended (it has one, its main
/// thread); how many were resumed.
pub(super) fn resume_threads(pid: u32) -> io::Result<usize> {
    let snap = snapshot(TH32CS_SNAPTHREAD)?;
    // SAFETY: plain data, all zero is valid.
    let mut t: THREADENTRY32 = unsafe { zeroed() };
    t.dwSize = size_of::<THREADENTRY32>() as u32;
    let mut resumed = 0;
    // SAFETY: a snapshot handle we own; `t` is a local with its size set.
    let mut more = unsafe { Thread32First(raw(&snap), &mut t) } != 0;
    while more {
        if t.th32OwnerProcessID == pid {
            let thread = open_thread(t.th32ThreadID)?;
            // SAFETY: a thread handle we own, opened to suspend and resume.
            if unsafe { ResumeThread(raw(&thread)) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as for `Thread32First`.
        more = unsafe { Thread32Next(raw(&snap), &mut t) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other(format!(
            "no thread of process {pid} to resume"
        )));
    }
    Ok(resumed)
}

fn open_thread(tid: u32) -> io::Result<OwnedHandle> {
    // SAFETY: no handle is passed in; the returned one is checked and owned.
    owned(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, tid) })
}

fn snapshot(what: u32) -> io::Result<OwnedHandle> {
    // SAFETY: no handle is passed in; the returned one is checked and owned.
    owned(unsafe { CreateToolhelp32Snapshot(what, 0) })
}

/// One process of the machine: its parent and the name of its program.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) pid: u32,
    pub(super) ppid: u32,
    pub(super) exe: String,
}

/// Every process of the machine, as one snapshot lists them.
pub(super) fn processes() -> io::Result<Vec<Entry>> {
    let snap = snapshot(TH32CS_SNAPPROCESS)?;
    // SAFETY: plain data, all zero is valid.
    let mut e: PROCESSENTRY32W = unsafe { zeroed() };
    e.dwSize = size_of::<PROCESSENTRY32W>() as u32;
    let mut out = Vec::new();
    // SAFETY: a snapshot handle we own; `e` is a local with its size set.
    let mut more = unsafe { Process32FirstW(raw(&snap), &mut e) } != 0;
    while more {
        let n = e
            .szExeFile
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(e.szExeFile.len());
        out.push(Entry {
            pid: e.th32ProcessID,
            ppid: e.th32ParentProcessID,
            exe: String::from_utf16_lossy(&e.szExeFile[..n]),
        });
        // SAFETY: as for `Process32FirstW`.
        more = unsafe { Process32NextW(raw(&snap), &mut e) } != 0;
    }
    Ok(out)
}

/// Send `CTRL_BREAK` to the console process group `group` (a process started with
/// `CREATE_NEW_PROCESS_GROUP` leads the group of its id). Fails where this process has no
/// console, or shares none with the group.
pub(super) fn ctrl_break(group: u32) -> io::Result<()> {
    // SAFETY: two integers; the call touches no memory of ours.
    ok(unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, group) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// A child that waits on its stdin (a pipe) until it is closed.
    fn waiting_child() -> std::process::Child {
        Command::new("cmd.exe")
            .args(["/d", "/q"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cmd.exe")
    }

    #[test]
    fn a_job_holds_its_process_counts_it_and_kills_it() {
        let job = Job::new().unwrap();
        let mut child = waiting_child();
        job.assign(child.as_raw_handle()).unwrap();
        assert_eq!(job.active_processes().unwrap(), 1);
        assert_eq!(job.process_ids().unwrap(), vec![child.id()]);
        let p = Process::open(child.id(), true).unwrap();
        assert!(p.running());
        let t = p.times().unwrap();
        assert!(t.created > 0);
        assert!(p.working_set().unwrap() > 0);
        assert!(p.io_bytes().is_some());
        match p.command_line() {
            Some(cmd) => assert!(
                cmd.to_lowercase().contains("cmd.exe") && cmd.contains("/q"),
                "{cmd}"
            ),
            // Windows 8.1 and later answer; wine 8 refuses the query (the sample then names
            // the program from the process list).
            None => assert!(
                std::env::var_os("WINEPREFIX").is_some(),
                "only wine refuses it"
            ),
        }
        job.terminate(7).unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(7));
        assert_eq!(job.active_processes().unwrap(), 0);
        assert!(job.process_ids().unwrap().is_empty());
        assert!(!p.running());
    }

    /// Whether `p` ends within 10 s (polled: the job's close ends it asynchronously).
    fn ends(p: &Process) -> bool {
        let t0 = std::time::Instant::now();
        while p.running() && t0.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        !p.running()
    }

    #[test]
    fn closing_the_job_kills_what_it_holds() {
        let job = Job::new().unwrap();
        let mut child = waiting_child();
        job.assign(child.as_raw_handle()).unwrap();
        let p = Process::open(child.id(), false).unwrap();
        drop(job);
        assert!(ends(&p), "the job's close ended it");
        let _ = child.wait();
    }

    #[test]
    fn a_job_told_to_keep_its_members_leaves_them_running_when_closed() {
        let job = Job::new().unwrap();
        let mut child = waiting_child();
        job.assign(child.as_raw_handle()).unwrap();
        let p = Process::open(child.id(), true).unwrap();
        job.keep_members_on_close().unwrap();
        drop(job);
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(p.running(), "the job's close left it running");
        p.terminate(1).unwrap();
        let _ = child.wait();
    }

    #[test]
    fn a_suspended_child_is_resumed_and_a_process_is_terminated_by_its_handle() {
        use std::os::windows::process::CommandExt;
        let mut child = Command::new("cmd.exe")
            .args(["/d", "/q"])
            .creation_flags(windows_sys::Win32::System::Threading::CREATE_SUSPENDED)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        assert_eq!(resume_threads(child.id()).unwrap(), 1);
        assert!(resume_threads(u32::MAX - 3).is_err(), "no such process");
        let listed = processes().unwrap();
        let me = listed.iter().find(|e| e.pid == child.id()).unwrap();
        assert_eq!(me.ppid, std::process::id());
        assert!(me.exe.to_lowercase().ends_with("cmd.exe"), "{}", me.exe);
        let p = Process::open(child.id(), true).unwrap();
        p.terminate(9).unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(9));
        assert!(Process::open(u32::MAX - 3, false).is_none());
    }

    #[test]
    fn a_unicode_string_is_read_only_inside_its_buffer() {
        let mut buf = vec![0u64; 8];
        let base = buf.as_ptr() as usize;
        // Length 4 bytes ("hi"), pointing 16 bytes in.
        buf[0] = 4 | (4 << 16);
        buf[1] = (base + 16) as u64;
        buf[2] = u64::from(b'h') | (u64::from(b'i') << 16);
        assert_eq!(unicode_string(&buf).as_deref(), Some("hi"));
        buf[1] = (base + 1000) as u64;
        assert_eq!(unicode_string(&buf), None, "outside the buffer");
        buf[1] = 8;
        assert_eq!(unicode_string(&buf), None, "below the buffer");
    }

    /// With a console, `CTRL_BREAK` to a child's new group ends a child that does not
    /// handle it; without one (a service, wine) the call fails, and the ladder goes on to
    /// the job's termination.
    #[test]
    fn ctrl_break_ends_a_group_where_there_is_a_console_and_fails_where_there_is_none() {
        use std::os::windows::process::CommandExt;
        use windows_sys::Win32::System::Console::GetConsoleWindow;
        use windows_sys::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP;
        let mut child = Command::new("ping.exe")
            .args(["-n", "100", "127.0.0.1"])
            .creation_flags(CREATE_NEW_PROCESS_GROUP)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let p = Process::open(child.id(), true).unwrap();
        // SAFETY: no arguments; it returns a window handle or null.
        let console = !unsafe { GetConsoleWindow() }.is_null();
        let sent = ctrl_break(child.id());
        if console {
            sent.unwrap();
            assert!(ends(&p), "CTRL_BREAK ended the group");
        } else {
            assert!(sent.is_err(), "no console: nothing can be sent");
            assert!(p.running());
            p.terminate(1).unwrap();
        }
        let _ = child.wait();
    }
}
