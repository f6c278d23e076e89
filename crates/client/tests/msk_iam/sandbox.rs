//! A clean AWS environment for one test: no credentials anywhere but what the test puts there.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// HOME as the process started, before any sandbox moved it (scripts/aws.sh finds its cache
/// there).
pub fn original_home() -> Option<OsString> {
    static HOME: OnceLock<Option<OsString>> = OnceLock::new();
    HOME.get_or_init(|| std::env::var_os("HOME")).clone()
}

/// The chain reads process-wide environment variables: one test at a time.
static ENVIRONMENT: Mutex<()> = Mutex::new(());

/// Every variable the chain reads, cleared for each test and restored after it.
const CHAIN_VARIABLES: [&str; 16] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "HOME",
];

/// A clean environment with a home directory of its own; restores the old one on drop.
pub struct Sandbox {
    home: PathBuf,
    saved: Vec<(&'static str, Option<std::ffi::OsString>)>,
    _lock: std::sync::MutexGuard<'static, ()>,
}

impl Sandbox {
    pub fn new(name: &str) -> Self {
        let lock = ENVIRONMENT
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let home = std::env::temp_dir().join(format!("krec-msk-iam-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(home.join(".aws")).unwrap();
        let saved = CHAIN_VARIABLES
            .iter()
            .map(|v| (*v, std::env::var_os(v)))
            .collect();
        for variable in CHAIN_VARIABLES {
            std::env::remove_var(variable);
        }
        std::env::set_var("HOME", &home);
        // The last link, unless a test serves it: no waiting on an address that is not there.
        std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
        Self {
            home,
            saved,
            _lock: lock,
        }
    }

    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.home.join(relative);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for (variable, value) in &self.saved {
            match value {
                Some(value) => std::env::set_var(variable, value),
                None => std::env::remove_var(variable),
            }
        }
        let _ = std::fs::remove_dir_all(&self.home);
    }
}
