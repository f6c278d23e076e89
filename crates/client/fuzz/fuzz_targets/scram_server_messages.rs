//! Arbitrary bytes as a SCRAM server-first and then server-final message. Byte 0 picks the
//! hash, bytes 1..3 (little endian) where the first message ends. Never panics; a
//! client-final echoes the server's nonce, which extends ours; no output holds the password.
#![no_main]

use krec_client::fuzzing::{scram_exchange, SCRAM_NONCE, SCRAM_PASSWORD};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [flags, lo, hi, body @ ..] = data else {
        return;
    };
    let split = usize::from(u16::from_le_bytes([*lo, *hi])).min(body.len());
    let (server_first, server_final) = body.split_at(split);
    let outcome = scram_exchange(flags & 1 == 1, server_first, server_final);

    if let Some(client_final) = &outcome.client_final {
        let text = std::str::from_utf8(client_final).unwrap();
        let nonce = std::str::from_utf8(server_first)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .strip_prefix("r=")
            .unwrap();
        assert!(nonce.starts_with(SCRAM_NONCE) && nonce.len() > SCRAM_NONCE.len());
        let expected = format!("c=biws,r={nonce},p=");
        assert!(text.starts_with(&expected), "{text}");
        assert!(!text.contains(SCRAM_PASSWORD));
    } else {
        assert!(!outcome.complete);
    }
    if outcome.complete {
        assert!(outcome.fault.is_none());
    }
    if let Some(fault) = &outcome.fault {
        assert!(!fault.contains(SCRAM_PASSWORD), "{fault}");
        assert!(fault.len() < 2048, "fault text is bounded");
    }
});
