//! Arbitrary text as `sasl.jaas.config`. Never panics; what parses has a module name and one
//! of the four control flags, and parses again the same once re-quoted.
#![no_main]

use krec_client::fuzzing::jaas;
use libfuzzer_sys::fuzz_target;

/// `value` in double quotes, with the escapes that make it read back unchanged.
fn quote(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok((module, flag, options)) = jaas(text) else {
        return;
    };
    assert!(!module.is_empty());
    assert!(matches!(
        flag.as_str(),
        "required" | "requisite" | "sufficient" | "optional"
    ));
    let mut again = format!("{} {flag}", quote(&module));
    for (key, value) in &options {
        again.push_str(&format!(" {}={}", quote(key), quote(value)));
    }
    again.push(';');
    assert_eq!(jaas(&again), Ok((module, flag, options)), "{again}");
});
