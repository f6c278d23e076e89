//! `krec backup` runs that end otherwise: one following its source until SIGTERM, one killed
//! (SIGKILL) before its commit and run again, and a backup into S3 (moto's server, the
//! suite's KREC_TEST_S3_ENDPOINT) run twice and read back by another S3 client.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::backup::{
    assert_same, backup, backup_command, decoded, manifest, partitions_of, segment_files,
};
use crate::mirror::{committed, summary_count};
use crate::support::broker::{
    broker, simple_records, unique_topic, varied_record, ProducePlan, Produced,
};

#[test]
fn a_backup_into_s3_is_the_same_backup() {
    let endpoint = std::env::var("KREC_TEST_S3_ENDPOINT")
        .expect("KREC_TEST_S3_ENDPOINT: an S3-compatible server (scripts/s3.sh start)");
    let broker = broker();
    let topic = unique_topic("backup-s3");
    broker.create_topic(&topic, 2, 1);
    let produce = |from: usize| {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "lz4".to_owned(),
            steps: vec![(
                None,
                (from..from + 60).map(|i| varied_record(i, 2)).collect(),
            )],
            ..ProducePlan::default()
        })
    };
    let bucket = unique_topic("krec-backup").to_lowercase().replace('_', "-");
    let made = Command::new("curl")
        .args(["-sf", "-X", "PUT", &format!("{endpoint}/{bucket}")])
        .status()
        .expect("run curl");
    assert!(made.success(), "bucket {bucket} at {endpoint}");
    let location = format!("s3://{bucket}/backups/{topic}");
    let run = |status: i32| {
        let output = backup_command(&broker, &topic, &location)
            .envs([
                ("AWS_ACCESS_KEY_ID", "test"),
                ("AWS_SECRET_ACCESS_KEY", "test"),
                ("AWS_REGION", "us-east-1"),
                ("AWS_ENDPOINT_URL", endpoint.as_str()),
                ("AWS_ALLOW_HTTP", "true"),
            ])
            .output()
            .expect("run krec backup");
        assert_eq!(
            output.status.code(),
            Some(status),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    produce(0);
    run(0);
    produce(60);
    // Run again: the manifest is read and rewritten over the version read (If-Match).
    run(0);
    // The objects as another S3 client (curl, signing) reads them: the manifest, then every
    // segment.
    let get = |key: &str| -> Vec<u8> {
        let output = Command::new("curl")
            .args([
                "-sf",
                "--aws-sigv4",
                "aws:amz:us-east-1:s3",
                "--user",
                "test:test",
            ])
            .arg(format!("{endpoint}/{bucket}/backups/{topic}/{key}"))
            .output()
            .expect("run curl");
        assert!(output.status.success(), "GET {key}");
        output.stdout
    };
    let kept: Value = serde_json::from_slice(&get("manifest.json")).expect("JSON");
    let local = tempfile::tempdir().expect("a directory");
    let mut files = Vec::new();
    for (partition, p) in partitions_of(&kept, &topic) {
        let segments = p["segments"].as_array().unwrap();
        assert_eq!(segments.len(), 2, "{partition}: one per run");
        for segment in segments {
            let name = segment["file"].as_str().unwrap();
            let path = local.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let bytes = get(name);
            assert_eq!(bytes.len() as u64, segment["bytes"].as_u64().unwrap());
            std::fs::write(&path, bytes).unwrap();
            files.push(path);
        }
    }
    files.sort();
    assert_same(&decoded(&files), &committed(&broker, &topic), &topic);
}

#[test]
fn a_following_backup_runs_until_sigterm_and_commits_what_it_read() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a directory");
    let topic = unique_topic("backup-follow");
    broker.create_topic(&topic, 2, 1);
    let produce = |from: usize| {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "snappy".to_owned(),
            steps: vec![(None, simple_records(from, 20, 2))],
            ..ProducePlan::default()
        })
    };
    produce(0);
    let location = dir.path().to_str().expect("UTF-8 path");
    let mut running = backup_command(&broker, &topic, location)
        .arg("--follow")
        .stderr(Stdio::piped())
        .spawn()
        .expect("run krec backup --follow");
    produce(20);
    std::thread::sleep(Duration::from_secs(3));
    let still = running.try_wait().expect("poll krec backup");
    if still.is_some() {
        let _ = running.wait();
        panic!("krec backup --follow stopped by itself: {still:?}");
    }
    let pid = running.id().to_string();
    let term = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(term.expect("kill").success());
    let output = running.wait_with_output().expect("wait for krec backup");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // What it read before SIGTERM is committed: the manifest's positions and the records in
    // the segments agree with the source's first records.
    let kept = manifest(dir.path());
    let backed_up = decoded(&segment_files(dir.path(), &topic));
    assert_eq!(summary_count(&stderr, "records, "), backed_up.len() as u64);
    assert!(backed_up.len() >= 20, "{stderr}");
    let source = committed(&broker, &topic);
    for (partition, p) in partitions_of(&kept, &topic) {
        let next = p["next_offset"].as_i64().unwrap();
        let want: Vec<Produced> = (source.iter())
            .filter(|r| i64::from(r.partition) == partition && r.offset < next)
            .cloned()
            .collect();
        let got: Vec<Produced> = (backed_up.iter())
            .filter(|r| i64::from(r.partition) == partition)
            .cloned()
            .collect();
        assert_same(&got, &want, &format!("{topic}-{partition}"));
    }
}

#[test]
fn a_backup_killed_mid_run_leaves_its_manifest_whole_and_runs_again() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a directory");
    let topic = unique_topic("backup-killed");
    broker.create_topic(&topic, 1, 1);
    let produce = |from: usize| {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "gzip".to_owned(),
            steps: vec![(None, simple_records(from, 30, 1))],
            ..ProducePlan::default()
        })
    };
    produce(0);
    backup(&broker, &topic, dir.path(), 0);
    let before = std::fs::read(dir.path().join("manifest.json")).expect("the manifest");
    produce(30);
    // Killed (SIGKILL) after reading and staging the new records, before its commit.
    let location = dir.path().to_str().expect("UTF-8 path");
    let mut running = backup_command(&broker, &topic, location)
        .arg("--follow")
        .stderr(Stdio::null())
        .spawn()
        .expect("run krec backup --follow");
    std::thread::sleep(Duration::from_secs(2));
    running.kill().expect("SIGKILL");
    let _ = running.wait();
    let after = std::fs::read(dir.path().join("manifest.json")).expect("the manifest");
    assert!(after == before, "the manifest changed without a commit");
    // Run again: it continues from the manifest, the staged leftovers written again.
    backup(&broker, &topic, dir.path(), 0);
    assert!(!dir.path().join(".krec-staging").exists());
    let kept = manifest(dir.path());
    let partition = &kept["topics"][&topic]["partition"]["0"];
    assert_eq!(partition["next_offset"], 60);
    let bases: Vec<i64> = (partition["segments"].as_array().unwrap().iter())
        .map(|s| s["base_offset"].as_i64().unwrap())
        .collect();
    assert_eq!(bases, [0, 30]);
    let files = segment_files(dir.path(), &topic);
    assert_eq!(files.len(), 2, "{files:?}");
    assert_same(&decoded(&files), &committed(&broker, &topic), &topic);
}
