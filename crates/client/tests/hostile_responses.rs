//! A broker that lies about array counts gets a typed error, and krec allocates nothing near
//! what the count asks for (bytes counted by a counting allocator on the test's thread).

use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use krec_client::{Connection, ConnectionSettings, Error};
use krec_testkit::broker::{self, answers};
use krec_testkit::CountingAllocator;

// Per thread: the test runs on a current-thread runtime, the fake broker's task included.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

/// A fake broker: announces Metadata 0..=8, then answers any other request with `body`
/// behind a correct response header.
async fn broker_answering(body: Vec<u8>) -> String {
    let body = bytes::Bytes::from(body);
    broker::start(move |request| match request.api_key {
        ApiKey::ApiVersions => request.answer(&answers::api_versions(&[(ApiKey::Metadata, 0, 8)])),
        _ => request.answer_raw(body.clone()),
    })
    .await
}

#[tokio::test(flavor = "current_thread")]
async fn an_array_count_of_2_pow_31_in_a_tiny_frame_is_a_typed_error_not_an_allocation() {
    // Metadata v8: throttle 0, then brokers: an i32 count of 2^31 - 1, and four bytes.
    let mut body = vec![0, 0, 0, 0];
    body.extend_from_slice(&i32::MAX.to_be_bytes());
    body.extend_from_slice(&[0, 0, 0, 1]);
    let address = broker_answering(body).await;
    let mut connection = Connection::connect(&address, &ConnectionSettings::default())
        .await
        .unwrap();
    let request = kafka_protocol::messages::MetadataRequest::default();
    let before = ALLOCATOR.thread();
    let error = connection
        .request_at(&request, 8, Duration::from_secs(5))
        .await
        .unwrap_err();
    let during = (ALLOCATOR.thread() - before).bytes;
    assert!(
        matches!(&error, Error::Protocol { broker, api: "Metadata", detail }
            if *broker == address
                && detail == "version 8: array of 2147483647 elements at byte 4 with 4 bytes left"),
        "{error}"
    );
    // The frame buffer and the error's text; kafka-protocol alone would reserve 2^31 brokers.
    assert!(during < 64 << 10, "{during} bytes allocated");
}
