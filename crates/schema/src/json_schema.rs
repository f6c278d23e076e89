//! JSON Schema values: JSON text already, written as it is once checked to be JSON; and the
//! other way, values checked against their schema before they are written.

use jsonschema::paths::LocationSegment;

use crate::misfit::Misfit;

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

/// A JSON Schema compiled for checking values before they are sent.
pub(crate) struct JsonSchemaValidator(jsonschema::Validator);

impl std::fmt::Debug for JsonSchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsonSchemaValidator")
    }
}

impl JsonSchemaValidator {
    /// Compiles the schema text (its draft from its `$schema`, else the newest); remote
    /// `$ref`s are not fetched.
    pub(crate) fn parse(schema: &str) -> Result<Self, String> {
        let schema: serde_json::Value =
            serde_json::from_str(schema).map_err(|e| format!("not JSON: {e}"))?;
        jsonschema::validator_for(&schema)
            .map(JsonSchemaValidator)
            .map_err(|e| e.to_string())
    }

    /// Checks `value`, then appends its compact JSON text.
    pub(crate) fn encode(
        &self,
        value: &serde_json::Value,
        out: &mut Vec<u8>,
    ) -> Result<(), Misfit> {
        if let Err(error) = self.0.validate(value) {
            let mut misfit = Misfit::new(error.to_string());
            let segments: Vec<LocationSegment<'_>> = error.instance_path().iter().collect();
            for segment in segments.into_iter().rev() {
                misfit = match segment {
                    LocationSegment::Property(name) => misfit.in_field(&name),
                    LocationSegment::Index(index) => misfit.in_item(index),
                };
            }
            return Err(misfit);
        }
        serde_json::to_writer(out, value).map_err(|e| Misfit::new(e.to_string()))
    }
}
