//! Records in Redis: one string key per record, `agent-watchdog:<name>`, created with
//! `SET … NX` (no expiry), read with `MGET`.

use redis::aio::MultiplexedConnection;

/// The prefix of every key the ledger writes.
pub(super) const KEY_PREFIX: &str = "agent-watchdog:";

/// A connection to one Redis database.
pub(super) struct RedisStore {
    conn: MultiplexedConnection,
}

fn key(name: &str) -> String {
    format!("{KEY_PREFIX}{name}")
}

impl RedisStore {
    /// Connect (and check the server answers).
    pub(super) async fn connect(url: &str) -> Result<RedisStore, String> {
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| e.to_string())?;
        let _: String = redis::cmd("PING")
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        Ok(RedisStore { conn })
    }

    /// Create `name` with `value` unless it exists: `true` if this call created it.
    pub(super) async fn create(&self, name: &str, value: &str) -> Result<bool, String> {
        let mut conn = self.conn.clone();
        let set: Option<String> = redis::cmd("SET")
            .arg(key(name))
            .arg(value)
            .arg("NX")
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        Ok(set.is_some())
    }

    /// The values of `names`, in order (`None`: no such record).
    pub(super) async fn get(&self, names: &[&str]) -> Result<Vec<Option<String>>, String> {
        let mut conn = self.conn.clone();
        let mut cmd = redis::cmd("MGET");
        for name in names {
            cmd.arg(key(name));
        }
        cmd.query_async(&mut conn).await.map_err(|e| e.to_string())
    }

    /// Where `name` lives, for messages.
    pub(super) fn place(name: &str) -> String {
        format!("key {}", key(name))
    }
}
