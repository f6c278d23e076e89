//! Protobuf values to canonical proto3 JSON, through descriptors built once per schema id.
//!
//! A registry holds a Protobuf schema as `.proto` text (Confluent's registry) or as a
//! base64 `FileDescriptorProto` (what the Python serializer registers, kept as is by
//! Apicurio); both compile, with their imports, into one prost-reflect pool. Well-known
//! types (`google/protobuf/*.proto`) are built in when the registry does not hold them.

use std::collections::HashMap;

use base64::Engine as _;
use prost::Message as _;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, FileDescriptor, Kind, MessageDescriptor,
    SerializeOptions,
};
use protox::file::{File, FileResolver, GoogleFileResolver};

use serde_path_to_error::{Path, Segment};

use crate::misfit::{shown, Misfit};

/// A Protobuf schema file, compiled with its imports.
#[derive(Debug)]
pub struct ProtobufSchema {
    file: FileDescriptor,
}

impl ProtobufSchema {
    /// Compiles `root` (named `root_name`), whose imports are in `imports` by import path;
    /// each text is `.proto` source or a base64 `FileDescriptorProto`.
    pub fn compile(
        root_name: &str,
        root: &str,
        imports: &HashMap<String, String>,
    ) -> Result<Self, String> {
        let mut files = HashMap::with_capacity(imports.len() + 1);
        for (name, text) in imports {
            files.insert(name.clone(), open(name, text)?);
        }
        files.insert(root_name.to_owned(), open(root_name, root)?);
        let resolver = RegistryFiles {
            files,
            google: GoogleFileResolver::new(),
        };
        let mut compiler = protox::Compiler::with_file_resolver(resolver);
        compiler.include_imports(true);
        compiler.open_file(root_name).map_err(|e| e.to_string())?;
        let pool: DescriptorPool = compiler.descriptor_pool();
        let file = pool
            .get_file_by_name(root_name)
            .ok_or_else(|| format!("{root_name} missing after compiling"))?;
        if file.messages().len() == 0 {
            return Err("the schema declares no message".into());
        }
        Ok(ProtobufSchema { file })
    }

    /// The message the framing's index path names: top-level message `path[0]`, then nested
    /// messages by index.
    pub fn message(&self, path: &[usize]) -> Result<MessageDescriptor, String> {
        let (&first, nested) = path.split_first().ok_or("empty message-index list")?;
        let mut message = self.file.messages().nth(first).ok_or_else(|| {
            format!(
                "message index {first}: the file has {} messages",
                self.file.messages().len()
            )
        })?;
        for &index in nested {
            let count = message.child_messages().len();
            let child = message.child_messages().nth(index);
            message = child.ok_or_else(|| {
                format!(
                    "nested message index {index}: {} has {count}",
                    message.full_name()
                )
            })?;
        }
        Ok(message)
    }

    /// Decodes `payload` as `message` and appends its canonical proto3 JSON.
    pub fn to_json(
        message: MessageDescriptor,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let name = message.full_name().to_owned();
        let value =
            DynamicMessage::decode(message, payload).map_err(|e| format!("as {name}: {e}"))?;
        let mut serializer = serde_json::Serializer::new(out);
        value
            .serialize_with_options(&mut serializer, &SerializeOptions::new())
            .map_err(|e| format!("as {name}: {e}"))
    }
}

impl ProtobufSchema {
    /// The message called `name` (its full name, or its name within the file's package) and
    /// its Confluent message-index path; the file's first message when `name` is `None`.
    pub fn message_named(
        &self,
        name: Option<&str>,
    ) -> Result<(MessageDescriptor, Vec<usize>), String> {
        let Some(name) = name else {
            return Ok((self.message(&[0])?, vec![0]));
        };
        let package = self.file.package_name();
        let full_name = match package.is_empty() || name.starts_with(&format!("{package}.")) {
            true => name.to_owned(),
            false => format!("{package}.{name}"),
        };
        let mut path = Vec::new();
        for (index, message) in self.file.messages().enumerate() {
            path.push(index);
            if find_nested(&message, &full_name, &mut path) {
                return Ok((message_at(&message, &path[1..]), path));
            }
            path.pop();
        }
        let names: Vec<String> = self.file.messages().map(|m| m.name().to_owned()).collect();
        Err(format!(
            "no message {name:?} in the schema (its messages: {})",
            names.join(", ")
        ))
    }

    /// Reads `value` in the proto3 JSON mapping as `message` and appends its binary encoding.
    pub(crate) fn from_json(
        message: &MessageDescriptor,
        value: &serde_json::Value,
        out: &mut Vec<u8>,
    ) -> Result<(), Misfit> {
        let mut track = serde_path_to_error::Track::new();
        let tracked = serde_path_to_error::Deserializer::new(value, &mut track);
        let parsed = DynamicMessage::deserialize(message.clone(), tracked)
            .map_err(|error| (error.to_string(), track.path()));
        let parsed = parsed.map_err(|(detail, path)| {
            let detail = match (expected_kind(message, &path), value_at(value, &path)) {
                (Some(kind), Some(found)) => {
                    format!("expected {kind}, got {} ({detail})", shown(found))
                }
                _ => detail,
            };
            misfit_at(&path, detail)
        })?;
        parsed
            .encode(out)
            .map_err(|error| Misfit::new(error.to_string()))
    }
}

/// Whether `full_name` is `message` or nested in it, pushing the nested indexes on `path`.
fn find_nested(message: &MessageDescriptor, full_name: &str, path: &mut Vec<usize>) -> bool {
    if message.full_name() == full_name {
        return true;
    }
    if !full_name.starts_with(message.full_name()) {
        return false;
    }
    for (index, child) in message.child_messages().enumerate() {
        path.push(index);
        if find_nested(&child, full_name, path) {
            return true;
        }
        path.pop();
    }
    false
}

fn message_at(message: &MessageDescriptor, nested: &[usize]) -> MessageDescriptor {
    let mut message = message.clone();
    for &index in nested {
        let child = message.child_messages().nth(index);
        message = child.expect("an index path found by find_nested");
    }
    message
}

/// The type of the field a serde path leads to, in Protobuf's words.
fn expected_kind(message: &MessageDescriptor, path: &Path) -> Option<String> {
    let mut kind = Kind::Message(message.clone());
    // A repeated or map field whose item or entry the next segment names.
    let mut container: Option<FieldDescriptor> = None;
    for segment in path.iter() {
        match (segment, container.take()) {
            (Segment::Seq { .. }, Some(field)) if field.is_list() => kind = field.kind(),
            (Segment::Map { .. }, Some(field)) if field.is_map() => {
                kind = field.kind().as_message()?.map_entry_value_field().kind()
            }
            (Segment::Map { key }, None) => {
                let message = kind.as_message()?;
                let field = message.get_field_by_json_name(key);
                let field = field.or_else(|| message.get_field_by_name(key))?;
                match field.is_list() || field.is_map() {
                    true => container = Some(field),
                    false => kind = field.kind(),
                }
            }
            _ => return None,
        }
    }
    Some(match (container, kind) {
        (Some(field), _) if field.is_list() => "a list".to_owned(),
        (Some(_), _) => "a map (an object)".to_owned(),
        (None, Kind::Message(message)) => message.full_name().to_owned(),
        (None, Kind::Enum(enumeration)) => format!("enum {}", enumeration.full_name()),
        (None, scalar) => format!("{scalar:?}").to_lowercase(),
    })
}

/// The part of `value` a serde path leads to.
fn value_at<'v>(value: &'v serde_json::Value, path: &Path) -> Option<&'v serde_json::Value> {
    path.iter().try_fold(value, |value, segment| match segment {
        Segment::Seq { index } => value.get(index),
        Segment::Map { key } => value.get(key),
        _ => None,
    })
}

/// A serde path (`order.lines[2].sku`) as a misfit's path.
fn misfit_at(path: &Path, detail: String) -> Misfit {
    let mut misfit = Misfit::new(detail);
    for segment in path.iter().collect::<Vec<_>>().into_iter().rev() {
        misfit = match segment {
            Segment::Seq { index } => misfit.in_item(*index),
            Segment::Map { key } => misfit.in_field(key),
            Segment::Enum { variant } => misfit.in_field(variant),
            Segment::Unknown => misfit,
        };
    }
    misfit
}

/// One registry text as a protox file: base64 descriptor if it decodes as one, else source.
fn open(name: &str, text: &str) -> Result<File, String> {
    let descriptor = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
        .and_then(|bytes| prost_types::FileDescriptorProto::decode(bytes.as_slice()).ok());
    match descriptor {
        Some(mut descriptor) => {
            descriptor.name = Some(name.to_owned());
            Ok(File::from_file_descriptor_proto(descriptor))
        }
        None => File::from_source(name, text).map_err(|e| e.to_string()),
    }
}

/// The files fetched from the registry, then the built-in well-known types.
struct RegistryFiles {
    files: HashMap<String, File>,
    google: GoogleFileResolver,
}

impl FileResolver for RegistryFiles {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match self.files.get(name) {
            Some(file) => Ok(file.clone()),
            None => self.google.open_file(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ProtobufSchema;
    use std::collections::HashMap;

    const SHOP: &str = r#"syntax = "proto3"; package shop;
        import "google/protobuf/timestamp.proto"; import "money.proto";
        message Order { message Line { string sku = 1; } repeated Line lines = 1;
                        google.protobuf.Timestamp at = 2; money.Amount total = 3; }
        message Refund { int64 cents = 1; }"#;

    fn compiled() -> ProtobufSchema {
        let imports = HashMap::from([(
            "money.proto".to_owned(),
            r#"syntax = "proto3"; package money; message Amount { sint64 cents = 1; }"#.to_owned(),
        )]);
        ProtobufSchema::compile("shop.proto", SHOP, &imports).expect("compiles")
    }

    #[test]
    fn imports_resolve_and_index_paths_name_nested_messages() {
        let schema = compiled();
        assert_eq!(schema.message(&[0]).unwrap().full_name(), "shop.Order");
        assert_eq!(schema.message(&[1]).unwrap().full_name(), "shop.Refund");
        assert_eq!(
            schema.message(&[0, 0]).unwrap().full_name(),
            "shop.Order.Line"
        );
        assert!(schema.message(&[2]).is_err());
        assert!(schema.message(&[1, 0]).is_err());
        let mut out = Vec::new();
        // Order { lines: [{sku: "a"}], total: {cents: -3} }
        let bytes = [0x0a, 0x03, 0x0a, 0x01, b'a', 0x1a, 0x02, 0x08, 0x05];
        ProtobufSchema::to_json(schema.message(&[0]).unwrap(), &bytes, &mut out).unwrap();
        assert_eq!(out, br#"{"lines":[{"sku":"a"}],"total":{"cents":"-3"}}"#);
        assert!(
            ProtobufSchema::to_json(schema.message(&[0]).unwrap(), &bytes[..4], &mut out).is_err()
        );
    }

    #[test]
    fn a_base64_descriptor_compiles_like_its_source() {
        use base64::Engine as _;
        use prost::Message as _;
        let schema = compiled();
        let descriptor = schema.file.file_descriptor_proto().encode_to_vec();
        let text = base64::engine::general_purpose::STANDARD.encode(descriptor);
        let imports = HashMap::from([(
            "money.proto".to_owned(),
            r#"syntax = "proto3"; package money; message Amount { sint64 cents = 1; }"#.to_owned(),
        )]);
        let again = ProtobufSchema::compile("other.proto", &text, &imports).expect("compiles");
        assert_eq!(again.message(&[1]).unwrap().full_name(), "shop.Refund");
        assert!(ProtobufSchema::compile("x.proto", "message {", &HashMap::new()).is_err());
    }
}
