//! The header index against a naive model: headers built from the fuzz input are encoded,
//! decoded, and every lookup must agree with a linear search of the original list.
#![no_main]

use krec_batch::encode::BatchBuilder;
use krec_batch::{BatchWalk, DecodeConfig};
use libfuzzer_sys::fuzz_target;

type Pairs = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Splits the input into (key, value) pairs: a length byte, then that many bytes; a value
/// length of 255 means null. Small key alphabet so duplicates are common.
fn pairs(mut data: &[u8]) -> Pairs {
    let mut out = Vec::new();
    while data.len() >= 2 {
        let key_len = (data[0] % 4) as usize;
        let value_len = data[1];
        data = &data[2..];
        let key: Vec<u8> = data.iter().take(key_len).map(|b| b % 3).collect();
        data = &data[key.len()..];
        let value = if value_len == 255 {
            None
        } else {
            let v: Vec<u8> = data.iter().take(value_len as usize).copied().collect();
            data = &data[v.len()..];
            Some(v)
        };
        out.push((key, value));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let expected = pairs(data);
    let refs: Vec<(&[u8], Option<&[u8]>)> = expected
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_deref()))
        .collect();
    let bytes = BatchBuilder::new(0).record(None, None, &refs).build();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&bytes, &config).next().unwrap().unwrap();
    let record = batch.records().next().unwrap().unwrap();
    let headers = record.headers();
    assert_eq!(headers.len(), expected.len());
    let got: Pairs = headers
        .iter()
        .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
        .collect();
    assert_eq!(got, expected);
    for (key, _) in &expected {
        let first = expected.iter().find(|(k, _)| k == key).unwrap();
        assert_eq!(
            headers.get(key).map(|h| h.value.map(<[u8]>::to_vec)),
            Some(first.1.clone())
        );
        let all: Vec<_> = headers
            .get_all(key)
            .map(|h| h.value.map(<[u8]>::to_vec))
            .collect();
        let want: Vec<_> = expected
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect();
        assert_eq!(all, want);
    }
    assert!(headers.get(b"\xff-absent").is_none());
});
