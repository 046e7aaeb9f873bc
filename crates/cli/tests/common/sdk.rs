//! The real Agent SDKs under test, as `scripts/install-sdk-test-deps` installs them: the
//! drop-in they run, the Python that has the Python SDK, the `node_modules` that holds the
//! TypeScript SDK, the scripts in `tests/sdk`. A missing prerequisite fails with the command
//! that installs it, never a skip.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use mock_api::harness::repo_root;

/// The drop-in under test: `WATCHDOG_TEST_DROP_IN` (an installed package's), else this build's.
pub fn drop_in() -> PathBuf {
    match std::env::var_os("WATCHDOG_TEST_DROP_IN").filter(|p| !p.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "WATCHDOG_TEST_DROP_IN={} does not exist",
                p.display()
            );
            p
        }
        None => PathBuf::from(env!("CARGO_BIN_EXE_claude-watchdog")),
    }
}

pub static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sdk {
    TypeScript,
    Python,
}

pub fn python() -> PathBuf {
    let py = match std::env::var_os("WATCHDOG_TEST_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => repo_root()
            .expect("the repository root")
            .join(".tools/sdk/py/bin/python"),
    };
    assert!(
        py.is_file(),
        "\n\nThe Python SDK test needs claude-agent-sdk in {}.\nRun `scripts/install-sdk-test-deps`.\n",
        py.display()
    );
    py
}

pub fn sdk_modules() -> PathBuf {
    let modules = match std::env::var_os("WATCHDOG_TEST_SDK_MODULES").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => repo_root()
            .expect("the repository root")
            .join(".tools/sdk/node_modules"),
    };
    assert!(
        modules.join("@anthropic-ai/claude-agent-sdk/sdk.mjs").is_file(),
        "\n\nThe SDK tests need the TypeScript Agent SDK in {}.\nRun `scripts/install-sdk-test-deps`.\n",
        modules.display()
    );
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|o| o.status.success()),
        "\n\nThe SDK tests need node (>= 18) on PATH.\n"
    );
    modules
}

pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk")
        .join(name)
}
