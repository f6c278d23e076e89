//! A broker that lies about array counts gets a typed error, and krec allocates nothing near
//! what the count asks for (bytes counted by a counting allocator on the test's thread).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use krec_client::{Connection, ConnectionSettings, Error};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

struct Counting;

thread_local! {
    // Const-initialised so reading it never allocates.
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call unchanged to the system allocator; counting touches only a
// thread-local Cell, which neither allocates nor reenters the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.with(|c| c.set(c.get().saturating_add(layout.size())));
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: ptr came from System.alloc with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        BYTES.with(|c| c.set(c.get().saturating_add(new_size)));
        // SAFETY: ptr came from System with this layout.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocated() -> usize {
    BYTES.with(Cell::get)
}

/// A fake broker: answers ApiVersions (Metadata 0..=8 only), then answers the next request
/// with `body` after a v0 response header carrying the request's correlation id.
async fn broker_answering(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        for answer in 0..2 {
            let mut size = [0u8; 4];
            socket.read_exact(&mut size).await.unwrap();
            let mut request = vec![0u8; i32::from_be_bytes(size) as usize];
            socket.read_exact(&mut request).await.unwrap();
            let mut frame = BytesMut::new();
            frame.put_i32(i32::from_be_bytes(request[4..8].try_into().unwrap()));
            if answer == 0 {
                // ApiVersions v3 (flexible body, v0 header): no error, Metadata 0..=8.
                frame.put_i16(0);
                frame.put_u8(2);
                frame.put_i16(3);
                frame.put_i16(0);
                frame.put_i16(8);
                frame.put_u8(0);
                frame.put_i32(0);
                frame.put_u8(0);
            } else {
                frame.put_slice(&body);
            }
            socket
                .write_all(&(frame.len() as i32).to_be_bytes())
                .await
                .unwrap();
            socket.write_all(&frame).await.unwrap();
        }
        let mut rest = Vec::new();
        let _ = socket.read_to_end(&mut rest).await;
    });
    address
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
    let before = allocated();
    let error = connection
        .request_at(&request, 8, Duration::from_secs(5))
        .await
        .unwrap_err();
    let during = allocated() - before;
    assert!(
        matches!(&error, Error::Protocol { broker, api: "Metadata", detail }
            if *broker == address
                && detail == "version 8: array of 2147483647 elements at byte 4 with 4 bytes left"),
        "{error}"
    );
    // The frame buffer and the error's text; kafka-protocol alone would reserve 2^31 brokers.
    assert!(during < 64 << 10, "{during} bytes allocated");
}
