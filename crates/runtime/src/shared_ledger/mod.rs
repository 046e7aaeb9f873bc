//! The shared recovery ledger: continuation markers on a Redis or PostgreSQL server, for a
//! fleet of machines; see [`SharedLedger`] (re-exported at the crate root).

mod exec;
#[cfg(feature = "ledger-postgres")]
mod postgres_store;
#[cfg(feature = "ledger-redis")]
mod redis_store;

use watchdog_core::recovery::{Claim, Ledger, LedgerEntry, LedgerError, Marker};
use watchdog_core::recovery::{SubagentKey, SubagentMarker};

use crate::ledger::records::{
    notice_record, read_marker, read_subagent_marker, session_record_name, subagent_notice_record,
    subagent_record_name, CONTINUED, NOTICED,
};
use exec::Exec;
pub use exec::REQUEST_TIMEOUT_SECS;
pub use watchdog_host::ledger_url::{LedgerBackend, LedgerUrl, LedgerUrlError};

enum Store {
    /// Keeps the enum inhabited-in-type when no backend is built in.
    #[allow(dead_code)]
    Never(std::convert::Infallible),
    #[cfg(feature = "ledger-redis")]
    Redis(redis_store::RedisStore),
    #[cfg(feature = "ledger-postgres")]
    Postgres(postgres_store::PostgresStore),
}

/// Continuation markers on a server every machine of a fleet reaches: Redis (`redis://…`) or
/// PostgreSQL (`postgres://…`), with the same semantics as [`FileLedger`](crate::FileLedger).
///
/// Each record has the name it has under a [`FileLedger`](crate::FileLedger)'s directory
/// (`continued/<session id>.json`, `noticed/…`, `subagents/continued/<session>.<agent>.json`,
/// `subagents/noticed/…`) and the same bytes (the marker as one line of JSON):
///
/// | backend | a record | created by |
/// |---|---|---|
/// | Redis | the string key `agent-watchdog:<name>`, no expiry | `SET key value NX` |
/// | PostgreSQL | a row `(name, value, created_at)` of the table `agent_watchdog_ledger`, made by the first watchdog that finds it missing | `INSERT … ON CONFLICT (name) DO NOTHING` |
///
/// So among any number of processes on any number of machines naming the same server, exactly
/// one [`Ledger::try_claim`] of a session gets [`Claim::Won`], and a notice is recorded once.
/// Every failure fails closed: a server that cannot be reached, that does not answer within
/// [`REQUEST_TIMEOUT_SECS`], or that holds a record that is not a marker of that session, is a
/// [`LedgerError`], and every ledger error means *do not continue*. Errors and
/// [`SharedLedger::marker_place`] name the server by its [`LedgerUrl`] without the password.
///
/// Durability is the server's: a Redis without persistence (no AOF, no RDB snapshot) forgets
/// markers when it restarts, and then a session could be continued again.
///
/// # Blocking
///
/// The [`Ledger`] methods block until the server answers. The client runs on the tokio
/// runtime the ledger was opened in (it must be multi-thread: calls from its tasks go through
/// [`tokio::task::block_in_place`]); opened outside any runtime, the ledger has a single-thread
/// runtime of its own. A call from a single-thread runtime's task is an error, never a panic.
///
/// # Cargo features
///
/// `ledger-redis` and `ledger-postgres` (both off by default) build the clients in; opening a
/// URL of a backend that was not built in is an error naming the feature.
pub struct SharedLedger {
    url: LedgerUrl,
    store: Store,
    // Declared last: the store (and its connection) goes first.
    exec: Exec,
}

impl std::fmt::Debug for SharedLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLedger")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

// Without a backend built in, no `SharedLedger` can be made: its methods are unreachable.
#[cfg_attr(
    not(any(feature = "ledger-redis", feature = "ledger-postgres")),
    allow(unreachable_code, unused_variables)
)]
impl SharedLedger {
    /// Connect to the ledger at `url` (a PostgreSQL ledger also creates its table if missing).
    ///
    /// # Errors
    ///
    /// [`LedgerError::Unavailable`], naming the URL without its password, if the backend was
    /// not built in, the server cannot be reached or refuses us. The caller must then not
    /// continue anything.
    pub fn open(url: &LedgerUrl) -> Result<SharedLedger, LedgerError> {
        let fail = |why: String| {
            LedgerError::Unavailable(format!(
                "{} ledger at {}: {}",
                url.backend(),
                url.redacted(),
                url.scrub(&why)
            ))
        };
        let exec = Exec::here().map_err(fail)?;
        let store = exec.run(Self::connect(url, &exec)).map_err(fail)?;
        Ok(SharedLedger {
            url: url.clone(),
            store,
            exec,
        })
    }

    async fn connect(url: &LedgerUrl, exec: &Exec) -> Result<Store, String> {
        match url.backend() {
            LedgerBackend::Redis => connect_redis(url).await,
            LedgerBackend::Postgres => connect_postgres(url, exec).await,
        }
    }

    /// The ledger's URL (shown without its password).
    pub fn url(&self) -> &LedgerUrl {
        &self.url
    }

    /// Where the continuation marker of `session_id` lives, for messages and summaries:
    /// the URL without its password, and the key or row.
    ///
    /// # Errors
    ///
    /// [`LedgerError::InvalidSessionId`] unless `session_id` is a UUID.
    pub fn marker_place(&self, session_id: &str) -> Result<String, LedgerError> {
        Ok(self.place(&session_record_name(CONTINUED, session_id)?))
    }

    fn place(&self, name: &str) -> String {
        let within: String = match &self.store {
            Store::Never(n) => match *n {},
            #[cfg(feature = "ledger-redis")]
            Store::Redis(_) => redis_store::RedisStore::place(name),
            #[cfg(feature = "ledger-postgres")]
            Store::Postgres(_) => postgres_store::PostgresStore::place(name),
        };
        format!("{} {within}", self.url.redacted())
    }

    fn fail(&self, what: &str, name: &str, why: String) -> LedgerError {
        LedgerError::Unavailable(format!(
            "cannot {what} {}: {}",
            self.place(name),
            self.url.scrub(&why)
        ))
    }

    fn create(&self, name: &str, value: &str) -> Result<bool, LedgerError> {
        let store = &self.store;
        self.exec
            .run(async move {
                match store {
                    Store::Never(n) => match *n {},
                    #[cfg(feature = "ledger-redis")]
                    Store::Redis(s) => s.create(name, value).await,
                    #[cfg(feature = "ledger-postgres")]
                    Store::Postgres(s) => s.create(name, value).await,
                }
            })
            .map_err(|why| self.fail("create", name, why))
    }

    /// The values of `names` (a marker and its notice: one round trip).
    fn get(&self, names: &[&str]) -> Result<Vec<Option<String>>, LedgerError> {
        let store = &self.store;
        let got: Vec<Option<String>> = self
            .exec
            .run(async move {
                match store {
                    Store::Never(n) => match *n {},
                    #[cfg(feature = "ledger-redis")]
                    Store::Redis(s) => s.get(names).await,
                    #[cfg(feature = "ledger-postgres")]
                    Store::Postgres(s) => s.get(names).await,
                }
            })
            .map_err(|why| self.fail("read", names[0], why))?;
        if got.len() != names.len() {
            return Err(self.fail("read", names[0], "a short answer".into()));
        }
        Ok(got)
    }

    /// Read `marker` and `notice`; the marker text goes through `read`.
    fn entry<M>(
        &self,
        marker: &str,
        notice: &str,
        read: impl FnOnce(&str, &dyn std::fmt::Display) -> Result<M, LedgerError>,
    ) -> Result<Option<(M, bool)>, LedgerError> {
        let got = self.get(&[marker, notice])?;
        let mut got = got.into_iter();
        let (Some(text), noticed) = (got.next().flatten(), got.next().flatten()) else {
            return Ok(None);
        };
        let m = read(&text, &self.place(marker))?;
        Ok(Some((m, noticed.is_some())))
    }

    fn notice(&self, marker: &str, notice: &str, record: String) -> Result<bool, LedgerError> {
        if self.get(&[marker])?.into_iter().next().flatten().is_none() {
            return Ok(false);
        }
        self.create(notice, &record)
    }
}

#[cfg(not(all(feature = "ledger-redis", feature = "ledger-postgres")))]
fn missing(backend: &str) -> String {
    format!("this build has no {backend} backend (cargo feature ledger-{backend})")
}

#[cfg(feature = "ledger-redis")]
async fn connect_redis(url: &LedgerUrl) -> Result<Store, String> {
    redis_store::RedisStore::connect(url.secret())
        .await
        .map(Store::Redis)
}

#[cfg(not(feature = "ledger-redis"))]
async fn connect_redis(_url: &LedgerUrl) -> Result<Store, String> {
    Err(missing("redis"))
}

#[cfg(feature = "ledger-postgres")]
async fn connect_postgres(url: &LedgerUrl, exec: &Exec) -> Result<Store, String> {
    postgres_store::PostgresStore::connect(url.secret(), exec)
        .await
        .map(Store::Postgres)
}

#[cfg(not(feature = "ledger-postgres"))]
async fn connect_postgres(_url: &LedgerUrl, _exec: &Exec) -> Result<Store, String> {
    Err(missing("postgres"))
}

fn claim(won: bool) -> Claim {
    if won {
        Claim::Won
    } else {
        Claim::AlreadyClaimed
    }
}

impl Ledger for SharedLedger {
    fn try_claim(&self, session_id: &str, marker: &Marker) -> Result<Claim, LedgerError> {
        let name = session_record_name(CONTINUED, session_id)?;
        let mut json = marker.to_json();
        json.push('\n');
        self.create(&name, &json).map(claim)
    }

    fn get(&self, session_id: &str) -> Result<Option<LedgerEntry>, LedgerError> {
        let marker = session_record_name(CONTINUED, session_id)?;
        let notice = session_record_name(NOTICED, session_id)?;
        Ok(self
            .entry(&marker, &notice, |text, place| {
                read_marker(text, session_id, place)
            })?
            .map(|(marker, notice_recorded)| LedgerEntry {
                marker,
                notice_recorded,
            }))
    }

    fn record_notice(&self, session_id: &str) -> Result<bool, LedgerError> {
        let marker = session_record_name(CONTINUED, session_id)?;
        let notice = session_record_name(NOTICED, session_id)?;
        self.notice(&marker, &notice, notice_record(session_id))
    }
}

impl Ledger<SubagentKey, SubagentMarker> for SharedLedger {
    fn try_claim(&self, key: &SubagentKey, marker: &SubagentMarker) -> Result<Claim, LedgerError> {
        let mut json = marker.to_json();
        json.push('\n');
        self.create(&subagent_record_name(CONTINUED, key), &json)
            .map(claim)
    }

    fn get(&self, key: &SubagentKey) -> Result<Option<LedgerEntry<SubagentMarker>>, LedgerError> {
        let marker = subagent_record_name(CONTINUED, key);
        let notice = subagent_record_name(NOTICED, key);
        Ok(self
            .entry(&marker, &notice, |text, place| {
                read_subagent_marker(text, key, place)
            })?
            .map(|(marker, notice_recorded)| LedgerEntry {
                marker,
                notice_recorded,
            }))
    }

    fn record_notice(&self, key: &SubagentKey) -> Result<bool, LedgerError> {
        let marker = subagent_record_name(CONTINUED, key);
        let notice = subagent_record_name(NOTICED, key);
        self.notice(&marker, &notice, subagent_notice_record(key))
    }
}
