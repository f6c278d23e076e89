//! The header index: lookups, duplicates, nulls, non-UTF-8 keys, spilling past the inline size.

use krec_batch::encode::BatchBuilder;
use krec_batch::{BatchWalk, DecodeConfig, Header};

fn with_headers(headers: &[(&[u8], Option<&[u8]>)], check: impl FnOnce(&krec_batch::Headers<'_>)) {
    let bytes = BatchBuilder::new(0)
        .record(Some(b"k"), Some(b"v"), headers)
        .build();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&bytes, &config).next().unwrap().unwrap();
    let record = batch.records().next().unwrap().unwrap();
    check(record.headers());
}

#[test]
fn get_returns_the_first_match_and_get_all_every_match_in_wire_order() {
    let headers: &[(&[u8], Option<&[u8]>)] = &[
        (b"trace", Some(b"a")),
        (b"other", Some(b"x")),
        (b"trace", None),
        (b"trace", Some(b"c")),
    ];
    with_headers(headers, |h| {
        assert_eq!(h.len(), 4);
        assert!(!h.is_empty());
        assert_eq!(h.get(b"trace").unwrap().value, Some(&b"a"[..]));
        let all: Vec<Option<&[u8]>> = h.get_all(b"trace").map(|x| x.value).collect();
        assert_eq!(all, vec![Some(&b"a"[..]), None, Some(&b"c"[..])]);
        assert_eq!(h.get(b"missing"), None);
        assert_eq!(h.get(b"trac"), None, "prefixes do not match");
        let keys: Vec<&[u8]> = h.iter().map(|x| x.key).collect();
        assert_eq!(keys, vec![&b"trace"[..], b"other", b"trace", b"trace"]);
    });
}

#[test]
fn empty_keys_and_values_are_not_null() {
    with_headers(&[(b"", Some(b"")), (b"n", None)], |h| {
        assert_eq!(
            h.get(b""),
            Some(Header {
                key: b"",
                value: Some(b"")
            })
        );
        assert_eq!(h.get(b"n").unwrap().value, None);
    });
}

#[test]
fn non_utf8_keys_are_reported_not_lost() {
    with_headers(&[(b"\xc3\x28", Some(b"v")), (b"ok", None)], |h| {
        let first = h.iter().next().unwrap();
        assert_eq!(first.key, b"\xc3\x28");
        assert!(first.key_str().is_err());
        assert_eq!(h.iter().nth(1).unwrap().key_str(), Ok("ok"));
        assert_eq!(h.get(b"\xc3\x28").unwrap().value, Some(&b"v"[..]));
    });
}

#[test]
fn many_headers_spill_past_the_inline_index_and_keep_order() {
    let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("key-{i}").into_bytes()).collect();
    let values: Vec<Vec<u8>> = (0..100)
        .map(|i| format!("value-{i}").into_bytes())
        .collect();
    let headers: Vec<(&[u8], Option<&[u8]>)> = keys
        .iter()
        .zip(&values)
        .map(|(k, v)| (k.as_slice(), Some(v.as_slice())))
        .collect();
    with_headers(&headers, |h| {
        assert_eq!(h.len(), 100);
        assert_eq!(h.get(b"key-99").unwrap().value, Some(&b"value-99"[..]));
        assert_eq!(h.get(b"key-16").unwrap().value, Some(&b"value-16"[..]));
        let collected: Vec<Header<'_>> = h.iter().collect();
        assert_eq!(collected.len(), 100);
        for (i, header) in collected.iter().enumerate() {
            assert_eq!(header.key, keys[i].as_slice());
        }
    });
}

#[test]
fn no_headers() {
    with_headers(&[], |h| {
        assert!(h.is_empty());
        assert_eq!(h.iter().count(), 0);
        assert_eq!(h.get(b"x"), None);
    });
}

#[test]
fn a_headers_section_past_64_kib_uses_the_wide_index() {
    let big = vec![0xabu8; 70_000];
    with_headers(
        &[
            (b"big", Some(&big)),
            (b"after", Some(b"tail")),
            (b"null", None),
        ],
        |h| {
            assert_eq!(h.len(), 3);
            assert_eq!(h.get(b"big").unwrap().value.map(<[u8]>::len), Some(70_000));
            assert_eq!(h.get(b"after").unwrap().value, Some(&b"tail"[..]));
            assert_eq!(h.get(b"null").unwrap().value, None);
        },
    );
}

#[test]
fn every_count_around_the_inline_limit_indexes_every_header() {
    // The inline index holds a handful of headers; each count from none to well past it must
    // give every header back, in order, whichever index serves it.
    for count in 0..24 {
        let keys: Vec<Vec<u8>> = (0..count).map(|i| format!("k{i}").into_bytes()).collect();
        let values: Vec<Vec<u8>> = (0..count).map(|i| vec![b'v'; i]).collect();
        let headers: Vec<(&[u8], Option<&[u8]>)> = keys
            .iter()
            .zip(&values)
            .enumerate()
            .map(|(i, (k, v))| (k.as_slice(), (i % 3 != 2).then_some(v.as_slice())))
            .collect();
        with_headers(&headers, |h| {
            assert_eq!(h.len(), count, "count {count}");
            let seen: Vec<(Vec<u8>, Option<Vec<u8>>)> = h
                .iter()
                .map(|x| (x.key.to_vec(), x.value.map(<[u8]>::to_vec)))
                .collect();
            let expected: Vec<(Vec<u8>, Option<Vec<u8>>)> = headers
                .iter()
                .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
                .collect();
            assert_eq!(seen, expected, "count {count}");
            for (k, v) in &headers {
                assert_eq!(h.get(k).map(|x| x.value), Some(*v), "count {count}");
            }
        });
    }
}

#[test]
fn short_long_and_null_headers_in_any_order_read_back_whole() {
    // The record reader indexes headers whose key and value lengths take one byte on a short
    // path and hands the first other header to the general reader. Every mix of up to four,
    // so every hand-over point, must read back exactly what was written.
    let long_key = vec![b'K'; 64]; // 64 is the first length whose varint takes two bytes
    let long_value = vec![b'V'; 300];
    let longest_short = vec![b'm'; 63];
    let kinds: [(&[u8], Option<&[u8]>); 6] = [
        (b"trace-id", Some(b"0123")),
        (&long_key, Some(b"v")),
        (b"big", Some(&long_value)),
        (b"null", None),
        (b"", Some(b"")),
        (&longest_short, Some(&longest_short)),
    ];
    for count in 1..=4u32 {
        for mix in 0..kinds.len().pow(count) {
            let headers: Vec<(&[u8], Option<&[u8]>)> = (0..count)
                .map(|i| kinds[mix / kinds.len().pow(i) % kinds.len()])
                .collect();
            with_headers(&headers, |h| {
                let seen: Vec<Header<'_>> = h.iter().collect();
                let expected: Vec<Header<'_>> = headers
                    .iter()
                    .map(|&(key, value)| Header { key, value })
                    .collect();
                assert_eq!(seen, expected, "mix {mix} of {count}");
                for (key, _) in &headers {
                    let first = headers.iter().find(|(k, _)| k == key).unwrap();
                    assert_eq!(h.get(key).map(|x| x.value), Some(first.1), "mix {mix}");
                }
            });
        }
    }
}

/// A record's headers as owned keys and values, in wire order.
type OwnedHeaders = Vec<(Vec<u8>, Option<Vec<u8>>)>;

#[test]
fn records_filled_in_place_never_read_the_heap_index_of_the_record_before() {
    // One `Record` is refilled for each record of a batch: a wide record (too many headers,
    // or a section past 64 KiB) builds a heap index on first lookup, and neither the records
    // after it nor the next wide record may read that index.
    let many: Vec<(Vec<u8>, Vec<u8>)> = (0..12)
        .map(|i| {
            (
                format!("a{i}").into_bytes(),
                format!("first-{i}").into_bytes(),
            )
        })
        .collect();
    let others: Vec<(Vec<u8>, Vec<u8>)> = (0..15)
        .map(|i| {
            (
                format!("b{i}").into_bytes(),
                format!("third-{i}").into_bytes(),
            )
        })
        .collect();
    let as_headers = |pairs: &[(Vec<u8>, Vec<u8>)]| -> OwnedHeaders {
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect()
    };
    let big = vec![0x5au8; 70_000];
    let records: Vec<OwnedHeaders> = vec![
        as_headers(&many),
        vec![(b"a0".to_vec(), Some(b"inline".to_vec()))],
        as_headers(&others),
        // Wide by its length alone: two headers, a section past 64 KiB.
        vec![(b"big".to_vec(), Some(big.clone())), (b"a1".to_vec(), None)],
        as_headers(&many),
    ];
    let mut builder = BatchBuilder::new(0);
    for headers in &records {
        let borrowed: Vec<(&[u8], Option<&[u8]>)> = headers
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        builder = builder.record(Some(b"k"), None, &borrowed);
    }
    let bytes = builder.build();
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&bytes, &config);
    let batch = walk.next_ref().unwrap().unwrap();
    let mut in_place = batch.records();
    for (i, expected) in records.iter().enumerate() {
        let record = in_place.next_ref().unwrap().unwrap();
        let h = record.headers();
        // A lookup first, so that a wide record's heap index is built before `iter` reads it.
        let (first_key, first_value) = &expected[0];
        assert_eq!(
            h.get(first_key).map(|x| x.value.map(<[u8]>::to_vec)),
            Some(first_value.clone()),
            "record {i}"
        );
        assert_eq!(h.get(b"b3").is_some(), i == 2, "record {i}");
        let seen: OwnedHeaders = h
            .iter()
            .map(|x| (x.key.to_vec(), x.value.map(<[u8]>::to_vec)))
            .collect();
        assert_eq!(&seen, expected, "record {i}");
    }
    assert!(in_place.next_ref().is_none());
}
