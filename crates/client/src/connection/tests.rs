use super::*;
use krec_testkit::broker::{self, answers, Reply};

/// A fake broker speaking Metadata 0..=12. Its answer to the client's `trigger` request
/// (the handshake's, or the Metadata request's: nothing) is followed by `pieces`, with
/// `pause` before each, then by a close.
async fn fake_broker(trigger: ApiKey, pieces: Vec<Vec<u8>>, pause: Duration) -> String {
    broker::start(move |request| {
        let reply = match request.api_key {
            ApiKey::ApiVersions => {
                request.answer(&answers::api_versions(&[(ApiKey::Metadata, 0, 12)]))
            }
            _ => Reply::raw(Bytes::new()),
        };
        if request.api_key != trigger {
            return reply;
        }
        let paced =
            |reply: Reply, piece: &Vec<u8>| reply.then(Reply::raw(piece.clone()).after(pause));
        pieces.iter().fold(reply, paced).then(Reply::close())
    })
    .await
}

/// `bytes` right after the handshake, unasked, then a close.
async fn sending(bytes: Vec<u8>) -> String {
    fake_broker(ApiKey::ApiVersions, vec![bytes], Duration::ZERO).await
}

/// `bytes` in answer to a Metadata request, then a close.
async fn answering_metadata_with(bytes: Vec<u8>) -> String {
    fake_broker(ApiKey::Metadata, vec![bytes], Duration::ZERO).await
}

#[tokio::test]
async fn negotiates_versions_with_a_fake_broker() {
    let address = sending(Vec::new()).await;
    let connection = Connection::connect(&address, &ConnectionSettings::default())
        .await
        .unwrap();
    assert_eq!(
        connection.versions().range(ApiKey::Metadata as i16),
        Some((0, 12))
    );
    assert_eq!(connection.versions().range(ApiKey::Fetch as i16), None);
}

#[tokio::test]
async fn hostile_frame_size_is_rejected_without_allocating() {
    let address = answering_metadata_with(i32::MAX.to_be_bytes().to_vec()).await;
    let settings = ConnectionSettings {
        max_frame_bytes: 1 << 20,
        ..ConnectionSettings::default()
    };
    let mut connection = Connection::connect(&address, &settings).await.unwrap();
    let request = kafka_protocol::messages::MetadataRequest::default();
    let error = connection
        .request_at(&request, 12, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::FrameTooLarge { size, max, .. } if size == i64::from(i32::MAX) && max == 1 << 20),
        "{error}"
    );
}

#[tokio::test]
async fn truncated_frame_is_a_connection_error() {
    let mut after = 100i32.to_be_bytes().to_vec();
    after.extend_from_slice(&[0; 10]);
    let address = answering_metadata_with(after).await;
    let mut connection = Connection::connect(&address, &ConnectionSettings::default())
        .await
        .unwrap();
    let request = kafka_protocol::messages::MetadataRequest::default();
    let error = connection
        .request_at(&request, 12, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Connection { source, .. } if source.kind() == std::io::ErrorKind::UnexpectedEof),
        "{error}"
    );
}

/// A frame of `size` bytes after its size prefix, filled with a pattern.
fn pattern_frame(size: usize) -> Vec<u8> {
    let mut frame = (size as i32).to_be_bytes().to_vec();
    frame.extend((0..size).map(|i| (i % 251) as u8));
    frame
}

#[tokio::test]
async fn a_frame_arriving_in_small_pieces_is_read_whole() {
    // Pieces far below the low-water mark, with pauses: the reader must be woken for each
    // tail of the frame, never wait for more bytes than are still to come.
    let first = pattern_frame(3 << 20);
    let second = pattern_frame(700);
    let mut wire = first.clone();
    wire.extend_from_slice(&second);
    let pieces: Vec<Vec<u8>> = wire.chunks(300 << 10).map(<[u8]>::to_vec).collect();
    let last_pieces: Vec<Vec<u8>> = pieces
        .last()
        .unwrap()
        .chunks(7)
        .map(<[u8]>::to_vec)
        .collect();
    let mut paced = pieces[..pieces.len() - 1].to_vec();
    paced.extend(last_pieces.into_iter().take(40));
    paced.push(pieces.last().unwrap()[7 * 40..].to_vec());
    let address = fake_broker(ApiKey::ApiVersions, paced, Duration::from_millis(2)).await;
    let mut connection = Connection::connect(&address, &ConnectionSettings::default())
        .await
        .unwrap();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let a = connection.read_frame().await.unwrap();
        let b = connection.read_frame().await.unwrap();
        (a, b)
    })
    .await
    .expect("no frame waits for bytes that never come");
    assert_eq!(&read.0[..], &first[4..]);
    assert_eq!(&read.1[..], &second[4..]);
}

#[tokio::test]
async fn frames_reuse_buffers_their_data_no_longer_needs() {
    let sizes = [200_000usize, 150_000, 200_000, 190_000];
    let mut wire = Vec::new();
    for size in sizes {
        wire.extend(pattern_frame(size));
    }
    let address = sending(wire).await;
    let mut connection = Connection::connect(&address, &ConnectionSettings::default())
        .await
        .unwrap();
    let first = connection.read_frame().await.unwrap();
    let records = first.slice(1000..2000);
    let first_address = first.as_ptr();
    drop(first);
    let second = connection.read_frame().await.unwrap();
    assert_ne!(
        second.as_ptr(),
        first_address,
        "a slice of the first is still alive"
    );
    drop(second);
    let third = connection.read_frame().await.unwrap();
    assert_ne!(third.as_ptr(), first_address);
    assert_eq!(
        &records[..],
        &pattern_frame(200_000)[1004..2004],
        "still intact"
    );
    drop(records);
    let fourth = connection.read_frame().await.unwrap();
    assert_eq!(
        fourth.as_ptr(),
        first_address,
        "the first buffer, free again, is reused"
    );
    assert_eq!(&fourth[..], &pattern_frame(190_000)[4..]);
    assert_eq!(&third[..], &pattern_frame(200_000)[4..]);
}

#[tokio::test]
async fn a_connection_closed_inside_the_size_prefix_is_an_error() {
    let address = sending(vec![0, 0]).await;
    let mut connection = Connection::connect(&address, &ConnectionSettings::default())
        .await
        .unwrap();
    let error = connection.read_frame().await.unwrap_err();
    assert!(
        matches!(&error, Error::Connection { source, .. }
            if source.kind() == std::io::ErrorKind::UnexpectedEof
                && source.to_string().contains("2 of 4 bytes")),
        "{error}"
    );
}

mod pipelined;
