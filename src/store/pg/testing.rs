//! Test support: a fresh PostgreSQL database per test on the server named by
//! `META_UTL_TEST_PG_URL` (a URL without database, e.g. `postgres://postgres@127.0.0.1:5432`),
//! dropped again when the test ends. Tests call [`fresh`] and return early when it answers
//! `None` (the variable is unset), so that the suite runs without a PostgreSQL server.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::store::{DbPath, Store};

/// The environment variable naming the test server.
pub(crate) const URL_VAR: &str = "META_UTL_TEST_PG_URL";

/// A store on a database of its own, dropped (`WITH (FORCE)`) with this value.
pub(crate) struct TestDb {
    store: Option<Store>,
    server: String,
    name: String,
}

impl std::ops::Deref for TestDb {
    type Target = Store;
    fn deref(&self) -> &Store {
        self.store.as_ref().expect("present until dropped")
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        self.store = None;
        if let Ok(mut c) = postgres::Client::connect(&admin_url(&self.server), postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

fn admin_url(server: &str) -> String {
    format!("{server}/postgres")
}

/// A store on a new, empty database for test `test` (lower-case letters, digits and `_`), or
/// `None` (after printing a "skipped" line) when [`URL_VAR`] is unset.
///
/// # Panics
/// When the server cannot be reached or the database cannot be created or opened.
pub(crate) fn fresh(test: &str) -> Option<TestDb> {
    fresh_with(test, |_| {})
}

/// [`fresh`], with `prepare` run on a plain connection to the new database before the store
/// opens it (to build a database as an older binary left it).
///
/// # Panics
/// As [`fresh`], or when `prepare` panics.
pub(crate) fn fresh_with(
    test: &str,
    prepare: impl FnOnce(&mut postgres::Client),
) -> Option<TestDb> {
    static N: AtomicU32 = AtomicU32::new(0);
    let Ok(server) = std::env::var(URL_VAR) else {
        eprintln!("skipped {test} on PostgreSQL: {URL_VAR} is not set");
        return None;
    };
    let server = server.trim_end_matches('/').to_owned();
    let short: String = test.chars().take(30).collect();
    let name = format!(
        "mu_test_{short}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = postgres::Client::connect(&admin_url(&server), postgres::NoTls)
        .unwrap_or_else(|e| panic!("{URL_VAR}={server}: {e}"));
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
    let url = format!("{server}/{name}?sslmode=disable");
    let mut plain = postgres::Client::connect(&format!("{server}/{name}"), postgres::NoTls)
        .unwrap_or_else(|e| panic!("connect {name}: {e}"));
    prepare(&mut plain);
    drop(plain);
    let path = DbPath::parse(&url).expect("test URL");
    let store = Store::open(&path).unwrap_or_else(|e| panic!("open {name}: {e}"));
    Some(TestDb {
        store: Some(store),
        server,
        name,
    })
}

/// `both_backends!(body, sqlite_test, postgres_test);` defines two tests running
/// `body(&Store)`: one on an in-memory SQLite store, one on a [`fresh`] PostgreSQL database
/// (skipped when [`URL_VAR`] is unset).
macro_rules! both_backends {
    ($body:ident, $sqlite:ident, $postgres:ident) => {
        #[test]
        fn $sqlite() {
            let store = $crate::store::Store::open(&$crate::store::DbPath::Memory).unwrap();
            $body(&store);
        }

        #[test]
        fn $postgres() {
            if let Some(db) = $crate::store::pg::testing::fresh(stringify!($postgres)) {
                $body(&db);
            }
        }
    };
}
pub(crate) use both_backends;
