//! The root package's `examples/produce.rs`, run against the suite's broker: it builds
//! nothing, it runs the executable test.sh's build step left in `target/debug/examples/` (by
//! hand: `cargo build --examples`).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::support::{live, read_back};

/// 200 lines in, 200 records acknowledged (the summary says so), each line read back as one
/// record whose key is its line number, each partition in line order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_produce_example_sends_every_line() {
    let broker = live::broker();
    let topic = live::unique_name("producer-example");
    broker.create_topic(&topic, 2);
    let exe = std::env::current_exe().expect("the test's path");
    let path: PathBuf = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/debug/deps")
        .join("examples")
        .join("produce");
    assert!(
        path.is_file(),
        "{} is missing: `cargo build --examples`",
        path.display()
    );
    let mut child = Command::new(path)
        .args([broker.bootstrap.as_str(), topic.as_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the example");
    let input: String = (0..200).map(|i| format!("line {i}\n")).collect();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write the lines");
    let output = child.wait_with_output().expect("the example's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("200 records acknowledged"), "{stdout}");
    assert!(stdout.contains("0 failed"), "{stdout}");

    let read = read_back(&broker.bootstrap, &topic).await;
    let mut lines = 0;
    for records in read.values() {
        let numbers: Vec<usize> = records
            .iter()
            .map(|r| {
                String::from_utf8(r.key.clone().unwrap())
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "line order");
        for (number, record) in numbers.iter().zip(records) {
            let want = format!("line {number}");
            assert_eq!(record.value.as_deref(), Some(want.as_bytes()));
        }
        lines += records.len();
    }
    assert_eq!(lines, 200);
}
