#![no_main]
//! Every response krec decodes, through its own entry point: byte 0 picks the API and version
//! (within what krec negotiates), the rest is the body after the response header.

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

mod alloc_bound;

#[global_allocator]
static GLOBAL: krec_testkit::CountingAllocator = krec_testkit::CountingAllocator::new();

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let choices: Vec<(i16, i16)> = krec_client::fuzzing::response_apis()
        .into_iter()
        .flat_map(|(key, min, max)| (min..=max).map(move |v| (key, v)))
        .collect();
    let (key, version) = choices[usize::from(pick) % choices.len()];
    let body = Bytes::copy_from_slice(body);
    let before = GLOBAL.thread().bytes;
    let outcome = krec_client::fuzzing::decode_response(key, version, body.clone());
    let used = GLOBAL.thread().bytes - before;
    assert!(
        used <= alloc_bound::bound(body.len()),
        "API {key} v{version}: {used} bytes for a {}-byte body",
        body.len()
    );
    if let Err(fault) = outcome {
        assert!(fault.len() < 512, "fault text stays short: {fault}");
    }
});
