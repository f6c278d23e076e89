//! JSON Schema values: JSON text already, written as it is once checked to be JSON.

/// Appends `payload` after checking that it is one JSON value; line breaks between tokens
/// become spaces so the value stays on its output line (JSON strings cannot hold raw ones).
pub fn to_json(payload: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    serde_json::from_slice::<serde::de::IgnoredAny>(payload)
        .map_err(|e| format!("not JSON: {e}"))?;
    let start = out.len();
    out.extend_from_slice(payload);
    for byte in &mut out[start..] {
        if matches!(*byte, b'\n' | b'\r') {
            *byte = b' ';
        }
    }
    Ok(())
}
