//! `kafka-backup-bench CONFIG.yaml`: one backup or restore by osodevops/kafka-backup's engine,
//! as its CLI runs it (`mode: backup` or `mode: restore` in the file, its own configuration
//! format), for scripts/bench-backup.sh. Exits 1 with the engine's error.

use kafka_backup_core::backup::BackupEngine;
use kafka_backup_core::config::Mode;
use kafka_backup_core::{Config, RestoreEngine};

#[tokio::main]
async fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: kafka-backup-bench CONFIG.yaml");
        std::process::exit(2);
    };
    if let Err(error) = run(&path).await {
        eprintln!("kafka-backup-bench: {path}: {error}");
        std::process::exit(1);
    }
}

async fn run(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let yaml = std::fs::read_to_string(path)?;
    let (config, ignored) = Config::from_yaml_with_warnings(&yaml)?;
    if !ignored.is_empty() {
        return Err(format!("unknown keys: {}", ignored.join(", ")).into());
    }
    match config.mode {
        Mode::Backup => BackupEngine::new(config).await?.run().await?,
        Mode::Restore => {
            let report = RestoreEngine::new(config)?.run().await?;
            eprintln!("kafka-backup-bench: restored {report:?}");
        }
    }
    Ok(())
}
