//! Records in PostgreSQL: one row per record in the table [`TABLE`] (created if missing),
//! created with `INSERT … ON CONFLICT DO NOTHING`.

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

use super::exec::Exec;

/// The table the ledger keeps its records in (in the connection's `search_path`).
pub(super) const TABLE: &str = "agent_watchdog_ledger";

/// A connection to one PostgreSQL database.
pub(super) struct PostgresStore {
    client: Client,
}

impl PostgresStore {
    /// Connect, and create the table unless it exists (racing creators are fine).
    pub(super) async fn connect(url: &str, exec: &Exec) -> Result<PostgresStore, String> {
        let (client, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .map_err(|e| e.to_string())?;
        // The connection's driver: it ends when the client is dropped.
        exec.spawn(async move {
            let _ = connection.await;
        });
        let store = PostgresStore { client };
        store.create_table().await?;
        Ok(store)
    }

    async fn create_table(&self) -> Result<(), String> {
        let exists = self
            .client
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&TABLE])
            .await
            .map_err(|e| e.to_string())?;
        if exists.get::<_, bool>(0) {
            return Ok(());
        }
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {TABLE} (\
               name text PRIMARY KEY, \
               value text NOT NULL, \
               created_at timestamptz NOT NULL DEFAULT now())"
        );
        match self.client.batch_execute(&create).await {
            Ok(()) => Ok(()),
            // Another process created it at the same moment (the catalog's unique index).
            Err(e)
                if matches!(
                    e.code(),
                    Some(c) if *c == SqlState::UNIQUE_VIOLATION || *c == SqlState::DUPLICATE_TABLE
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Create `name` with `value` unless it exists: `true` if this call created it.
    pub(super) async fn create(&self, name: &str, value: &str) -> Result<bool, String> {
        let insert = format!(
            "INSERT INTO {TABLE} (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING"
        );
        let rows = self
            .client
            .execute(&insert, &[&name, &value])
            .await
            .map_err(|e| e.to_string())?;
        Ok(rows == 1)
    }

    /// The values of `names`, in order (`None`: no such record).
    pub(super) async fn get(&self, names: &[&str]) -> Result<Vec<Option<String>>, String> {
        let select = format!("SELECT name, value FROM {TABLE} WHERE name = ANY($1)");
        let rows = self
            .client
            .query(&select, &[&names])
            .await
            .map_err(|e| e.to_string())?;
        let mut out = vec![None; names.len()];
        for row in rows {
            let name: &str = row.try_get(0).map_err(|e| e.to_string())?;
            let value: String = row.try_get(1).map_err(|e| e.to_string())?;
            if let Some(i) = names.iter().position(|n| *n == name) {
                out[i] = Some(value);
            }
        }
        Ok(out)
    }

    /// Where `name` lives, for messages.
    pub(super) fn place(name: &str) -> String {
        format!("table {TABLE} row {name}")
    }
}
