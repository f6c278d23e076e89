//! Avro binary values to JSON, walking a schema compiled once per id.
//!
//! apache-avro parses the schema (names, namespaces, references); the per-record walk is
//! ours: it reads the binary encoding straight from the borrowed payload and writes JSON
//! text, building no value tree (see BENCHMARKS.md, "Schema Registry values").
//!
//! The JSON mapping (also in the README): records and maps are objects, arrays arrays;
//! a union's value is written as its branch's value, without the branch name; enums are
//! their symbol; bytes and fixed are base64 strings; `decimal` is a string of the exact
//! decimal (`"-12.30"`); `uuid` a string; `date` `"2024-01-31"`; `time-millis`/`-micros`
//! `"13:45:10.250"`; `timestamp-millis`/`-micros`/`-nanos` RFC 3339 in UTC with 3, 6 or 9
//! fraction digits, the `local-` ones the same without `Z`; `duration` an object of
//! `months`, `days`, `millis`; float NaN and infinities the strings `"NaN"`, `"Infinity"`,
//! `"-Infinity"`.

use std::collections::HashMap;

use apache_avro::schema::{Name, Namespace, RecordSchema, Schema};

use crate::json::{push_base64, push_f32, push_f64, push_str, push_utf8};
use crate::time::{push_date, push_time_of_day, push_timestamp};

/// Deepest nesting of records, arrays, maps and unions read (a recursive schema can nest
/// without end).
const MAX_DEPTH: usize = 128;
/// Most items in one block of an array or map whose items can take no bytes (e.g. nulls).
const MAX_EMPTY_ITEMS: u64 = 1 << 16;

/// An Avro schema compiled for decoding.
#[derive(Debug)]
pub struct AvroSchema {
    nodes: Vec<Node>,
    /// The top-level type (children are compiled before their parents).
    root: NodeId,
}

type NodeId = usize;

#[derive(Debug)]
enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Array(NodeId),
    Map(NodeId),
    Union(Vec<NodeId>),
    /// Each field's `"name":` text, ready to write, and its type.
    Record(Vec<(Box<[u8]>, NodeId)>),
    /// Each symbol as a quoted JSON string.
    Enum(Vec<Box<[u8]>>),
    Fixed(usize),
    Decimal {
        scale: usize,
        fixed: Option<usize>,
    },
    Uuid,
    Date,
    TimeMillis,
    TimeMicros,
    Timestamp {
        digits: u32,
        utc: bool,
    },
    Duration,
    /// A named type whose node is being compiled (replaced before use).
    Pending,
}

impl Node {
    /// A timestamp in UTC with `digits` fraction digits.
    const fn utc_timestamp(digits: u32) -> Node {
        Node::Timestamp { digits, utc: true }
    }

    /// A local timestamp (written without `Z`) with `digits` fraction digits.
    const fn local_timestamp(digits: u32) -> Node {
        Node::Timestamp { digits, utc: false }
    }
}

impl AvroSchema {
    /// Compiles `schema`, whose named references are among `references` (Avro JSON each).
    pub fn parse(schema: &str, references: &[String]) -> Result<Self, String> {
        let (root, named) = if references.is_empty() {
            (
                Schema::parse_str(schema).map_err(|e| e.to_string())?,
                Vec::new(),
            )
        } else {
            Schema::parse_str_with_list(schema, references).map_err(|e| e.to_string())?
        };
        let mut known = HashMap::new();
        for schema in named.iter().chain(std::iter::once(&root)) {
            collect_names(schema, &None, &mut known);
        }
        let mut compiler = Compiler {
            nodes: Vec::new(),
            compiled: HashMap::new(),
            known,
        };
        let root = compiler.compile(&root, &None)?;
        Ok(AvroSchema {
            nodes: compiler.nodes,
            root,
        })
    }

    /// Decodes one value (all of `payload`) and appends its JSON text to `out`.
    pub fn to_json(&self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut reader = Reader {
            bytes: payload,
            position: 0,
        };
        self.write(self.root, &mut reader, out, 0)?;
        if reader.position != payload.len() {
            return Err(format!(
                "{} bytes left after the value, at byte {}",
                payload.len() - reader.position,
                reader.position
            ));
        }
        Ok(())
    }

    fn write(
        &self,
        id: NodeId,
        reader: &mut Reader<'_>,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        match &self.nodes[id] {
            Node::Null => out.extend_from_slice(b"null"),
            Node::Boolean => match reader.byte()? {
                0 => out.extend_from_slice(b"false"),
                1 => out.extend_from_slice(b"true"),
                other => return Err(reader.error(format!("boolean byte {other}"))),
            },
            Node::Int => push_int(out, reader.int()?),
            Node::Long => push_int(out, reader.long()?),
            Node::Float => push_f32(out, f32::from_le_bytes(reader.array()?)),
            Node::Double => push_f64(out, f64::from_le_bytes(reader.array()?)),
            Node::Bytes => push_base64(out, reader.sized()?),
            Node::String => reader.push_text(out)?,
            Node::Fixed(size) => push_base64(out, reader.take(*size)?),
            Node::Enum(symbols) => {
                let index = reader.long()?;
                let symbol = usize::try_from(index).ok().and_then(|i| symbols.get(i));
                let symbol = symbol.ok_or_else(|| reader.error(format!("enum index {index}")))?;
                out.extend_from_slice(symbol);
            }
            Node::Union(branches) => {
                let index = reader.long()?;
                let branch = usize::try_from(index).ok().and_then(|i| branches.get(i));
                let branch = branch.ok_or_else(|| reader.error(format!("union index {index}")))?;
                self.write(*branch, reader, out, deeper(depth, reader)?)?;
            }
            Node::Record(fields) => self.write_record(fields, reader, out, depth)?,
            Node::Array(items) => self.write_items(*items, false, reader, out, depth)?,
            Node::Map(values) => self.write_items(*values, true, reader, out, depth)?,
            Node::Decimal { scale, fixed } => write_decimal(reader, out, *scale, *fixed)?,
            Node::Uuid => write_uuid(reader, out)?,
            Node::Date => {
                let days = reader.int()?;
                out.push(b'"');
                push_date(out, i64::from(days));
                out.push(b'"');
            }
            Node::TimeMillis => {
                let millis = reader.int()?;
                push_time_of_day(out, i64::from(millis) * 1000, 3);
            }
            Node::TimeMicros => {
                let micros = reader.long()?;
                push_time_of_day(out, micros, 6);
            }
            Node::Timestamp { digits, utc } => {
                let count = reader.long()?;
                push_timestamp(out, count, *digits, *utc);
            }
            Node::Duration => write_duration(reader, out)?,
            Node::Pending => return Err("schema refers to a type being compiled".into()),
        }
        Ok(())
    }

    /// A record as an object of its fields, in schema order.
    fn write_record(
        &self,
        fields: &[(Box<[u8]>, NodeId)],
        reader: &mut Reader<'_>,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        let depth = deeper(depth, reader)?;
        out.push(b'{');
        for (i, (name, field)) in fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(name);
            self.write(*field, reader, out, depth)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// An array's items as a JSON array or, `keyed`, a map's entries (each an Avro string,
    /// then the value) as an object.
    fn write_items(
        &self,
        items: NodeId,
        keyed: bool,
        reader: &mut Reader<'_>,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        let depth = deeper(depth, reader)?;
        let (open, close) = if keyed { (b'{', b'}') } else { (b'[', b']') };
        out.push(open);
        let mut first = true;
        self.blocks(items, reader, |reader| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            if keyed {
                reader.push_text(out)?;
                out.push(b':');
            }
            self.write(items, reader, out, depth)
        })?;
        out.push(close);
        Ok(())
    }

    /// Reads the blocks of an array or map, calling `item` for each item.
    fn blocks(
        &self,
        items: NodeId,
        reader: &mut Reader<'_>,
        mut item: impl FnMut(&mut Reader<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        loop {
            let mut count = reader.long()?;
            if count == 0 {
                return Ok(());
            }
            if count < 0 {
                count = count
                    .checked_neg()
                    .ok_or_else(|| reader.error("block count".into()))?;
                reader.long()?; // The block's size in bytes, for skipping: not needed here.
            }
            let count = count as u64;
            let bound = if self.may_be_empty(items) {
                MAX_EMPTY_ITEMS
            } else {
                reader.remaining() as u64
            };
            if count > bound {
                return Err(
                    reader.error(format!("block of {count} items, more than the bytes left"))
                );
            }
            for _ in 0..count {
                item(reader)?;
            }
        }
    }

    /// Whether a value of this type can be encoded in zero bytes.
    fn may_be_empty(&self, id: NodeId) -> bool {
        match &self.nodes[id] {
            Node::Null | Node::Fixed(0) | Node::Decimal { fixed: Some(0), .. } => true,
            Node::Record(fields) => fields.iter().all(|(_, field)| self.may_be_empty(*field)),
            _ => false,
        }
    }
}

/// A decimal as a string of its exact value: `bytes` (or `fixed`) holding the unscaled
/// two's-complement integer.
fn write_decimal(
    reader: &mut Reader<'_>,
    out: &mut Vec<u8>,
    scale: usize,
    fixed: Option<usize>,
) -> Result<(), String> {
    let unscaled = match fixed {
        Some(size) => reader.take(size)?,
        None => reader.sized()?,
    };
    out.push(b'"');
    crate::decimal::push_decimal(out, unscaled, scale);
    out.push(b'"');
    Ok(())
}

/// A uuid as a string: its text, or 16 raw bytes written in the hyphenated form.
fn write_uuid(reader: &mut Reader<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    let bytes = reader.sized()?;
    match std::str::from_utf8(bytes) {
        Ok(text) if bytes.len() != 16 => push_str(out, text),
        _ => push_uuid_bytes(out, bytes, reader)?,
    }
    Ok(())
}

/// A duration (fixed 12: three little-endian u32) as an object of its three parts.
fn write_duration(reader: &mut Reader<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    let bytes: [u8; 12] = reader.array()?;
    let part = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    out.extend_from_slice(b"{\"months\":");
    push_int(out, part(0));
    out.extend_from_slice(b",\"days\":");
    push_int(out, part(4));
    out.extend_from_slice(b",\"millis\":");
    push_int(out, part(8));
    out.push(b'}');
    Ok(())
}

fn deeper(depth: usize, reader: &Reader<'_>) -> Result<usize, String> {
    if depth >= MAX_DEPTH {
        return Err(reader.error(format!("nested deeper than {MAX_DEPTH}")));
    }
    Ok(depth + 1)
}

fn push_int(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

fn push_uuid_bytes(out: &mut Vec<u8>, bytes: &[u8], reader: &Reader<'_>) -> Result<(), String> {
    if bytes.len() != 16 {
        return Err(reader.error("uuid neither text nor 16 bytes".into()));
    }
    out.push(b'"');
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.extend_from_slice(format!("{byte:02x}").as_bytes());
    }
    out.push(b'"');
    Ok(())
}

/// The binary encoding's primitives over a borrowed payload.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

// The primitives are inlined into the walk and their error text built out of line: the
// walk runs once per field of every record.
impl<'a> Reader<'a> {
    #[cold]
    #[inline(never)]
    fn error(&self, what: String) -> String {
        format!("{what} at byte {}", self.position)
    }

    #[inline]
    fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    #[inline]
    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        match self
            .bytes
            .get(self.position..)
            .and_then(|rest| rest.get(..len))
        {
            Some(bytes) => {
                self.position += len;
                Ok(bytes)
            }
            None => Err(self.truncated(len)),
        }
    }

    #[cold]
    #[inline(never)]
    fn truncated(&self, len: usize) -> String {
        self.error(format!(
            "truncated: {len} bytes needed, {} left",
            self.remaining()
        ))
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    #[inline]
    fn byte(&mut self) -> Result<u8, String> {
        match self.bytes.get(self.position) {
            Some(&byte) => {
                self.position += 1;
                Ok(byte)
            }
            None => Err(self.truncated(1)),
        }
    }

    #[inline]
    fn long(&mut self) -> Result<i64, String> {
        // Most longs (lengths, indexes, small numbers) fit one byte.
        if let Some(&byte) = self.bytes.get(self.position) {
            if byte & 0x80 == 0 {
                self.position += 1;
                return Ok(i64::from(byte >> 1) ^ -i64::from(byte & 1));
            }
        }
        self.long_slow()
    }

    fn long_slow(&mut self) -> Result<i64, String> {
        let mut raw: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = self.byte()?;
            raw |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err(self.error("varint longer than 10 bytes".into()))
    }

    #[inline]
    fn int(&mut self) -> Result<i32, String> {
        let value = self.long()?;
        i32::try_from(value).map_err(|_| self.error(format!("int {value} out of range")))
    }

    #[inline]
    fn sized(&mut self) -> Result<&'a [u8], String> {
        let len = self.long()?;
        let len = usize::try_from(len).map_err(|_| self.error(format!("length {len}")))?;
        self.take(len)
    }

    /// Reads a string and appends it as a JSON string.
    #[inline]
    fn push_text(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let bytes = self.sized()?;
        if push_utf8(out, bytes) {
            Ok(())
        } else {
            Err(self.error("string is not UTF-8".into()))
        }
    }
}

/// Turns apache-avro's schema into nodes, each named type once.
struct Compiler<'s> {
    nodes: Vec<Node>,
    compiled: HashMap<Name, NodeId>,
    known: HashMap<Name, &'s Schema>,
}

impl<'s> Compiler<'s> {
    fn add(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn compile(&mut self, schema: &'s Schema, namespace: &Namespace) -> Result<NodeId, String> {
        let node = match schema {
            Schema::Null => Node::Null,
            Schema::Boolean => Node::Boolean,
            Schema::Int => Node::Int,
            Schema::Long => Node::Long,
            Schema::Float => Node::Float,
            Schema::Double => Node::Double,
            Schema::Bytes => Node::Bytes,
            Schema::String => Node::String,
            Schema::Uuid => Node::Uuid,
            Schema::Date => Node::Date,
            Schema::TimeMillis => Node::TimeMillis,
            Schema::TimeMicros => Node::TimeMicros,
            Schema::TimestampMillis => Node::utc_timestamp(3),
            Schema::TimestampMicros => Node::utc_timestamp(6),
            Schema::TimestampNanos => Node::utc_timestamp(9),
            Schema::LocalTimestampMillis => Node::local_timestamp(3),
            Schema::LocalTimestampMicros => Node::local_timestamp(6),
            Schema::LocalTimestampNanos => Node::local_timestamp(9),
            Schema::Duration => Node::Duration,
            Schema::BigDecimal => return Err("logical type big-decimal is not supported".into()),
            Schema::Decimal(decimal) => Node::Decimal {
                scale: decimal.scale,
                fixed: match decimal.inner.as_ref() {
                    Schema::Fixed(fixed) => Some(fixed.size),
                    _ => None,
                },
            },
            Schema::Array(array) => {
                let items = self.compile(&array.items, namespace)?;
                Node::Array(items)
            }
            Schema::Map(map) => {
                let values = self.compile(&map.types, namespace)?;
                Node::Map(values)
            }
            Schema::Union(union) => {
                let mut branches = Vec::with_capacity(union.variants().len());
                for variant in union.variants() {
                    branches.push(self.compile(variant, namespace)?);
                }
                Node::Union(branches)
            }
            Schema::Enum(enumeration) => {
                let name = enumeration.name.fully_qualified_name(namespace);
                let symbols = enumeration.symbols.iter().map(|s| quoted(s)).collect();
                return Ok(self.named(name, Node::Enum(symbols)));
            }
            Schema::Fixed(fixed) => {
                let name = fixed.name.fully_qualified_name(namespace);
                return Ok(self.named(name, Node::Fixed(fixed.size)));
            }
            Schema::Record(record) => return self.compile_record(record, namespace),
            Schema::Ref { name } => return self.compile_ref(name, namespace),
        };
        Ok(self.add(node))
    }

    /// A record is named before its fields are compiled, so a field can refer to it.
    fn compile_record(
        &mut self,
        record: &'s RecordSchema,
        namespace: &Namespace,
    ) -> Result<NodeId, String> {
        let name = record.name.fully_qualified_name(namespace);
        let id = self.named(name.clone(), Node::Pending);
        let mut fields = Vec::with_capacity(record.fields.len());
        for field in &record.fields {
            let mut key = quoted(&field.name).into_vec();
            key.push(b':');
            fields.push((key.into(), self.compile(&field.schema, &name.namespace)?));
        }
        self.nodes[id] = Node::Record(fields);
        Ok(id)
    }

    /// A reference to a named type: the node already compiled, or the type compiled now.
    fn compile_ref(&mut self, name: &Name, namespace: &Namespace) -> Result<NodeId, String> {
        let name = name.fully_qualified_name(namespace);
        if let Some(&id) = self.compiled.get(&name) {
            return Ok(id);
        }
        let schema = *self
            .known
            .get(&name)
            .ok_or_else(|| format!("unknown type {}", name.fullname(None)))?;
        self.compile(schema, &name.namespace)
    }

    fn named(&mut self, name: Name, node: Node) -> NodeId {
        let id = self.add(node);
        self.compiled.insert(name, id);
        id
    }
}

/// Every named type in `schema`, by full name.
pub(crate) fn collect_names<'s>(
    schema: &'s Schema,
    namespace: &Namespace,
    into: &mut HashMap<Name, &'s Schema>,
) {
    match schema {
        Schema::Record(record) => {
            let name = record.name.fully_qualified_name(namespace);
            for field in &record.fields {
                collect_names(&field.schema, &name.namespace, into);
            }
            into.insert(name, schema);
        }
        Schema::Enum(e) => {
            into.insert(e.name.fully_qualified_name(namespace), schema);
        }
        Schema::Fixed(f) => {
            into.insert(f.name.fully_qualified_name(namespace), schema);
        }
        Schema::Array(array) => collect_names(&array.items, namespace, into),
        Schema::Map(map) => collect_names(&map.types, namespace, into),
        Schema::Union(union) => {
            for variant in union.variants() {
                collect_names(variant, namespace, into);
            }
        }
        _ => {}
    }
}

fn quoted(text: &str) -> Box<[u8]> {
    let mut out = Vec::with_capacity(text.len() + 2);
    push_str(&mut out, text);
    out.into()
}

#[cfg(test)]
mod tests {
    use super::AvroSchema;

    fn decode(schema: &str, payload: &[u8]) -> Result<String, String> {
        let schema = AvroSchema::parse(schema, &[]).expect("valid schema");
        let mut out = Vec::new();
        schema.to_json(payload, &mut out)?;
        Ok(String::from_utf8(out).expect("UTF-8 JSON"))
    }

    const RECORD: &str = r#"{"type":"record","name":"R","fields":[
        {"name":"n","type":"long"},{"name":"s","type":["null","string"]},
        {"name":"m","type":{"type":"map","values":"int"}}]}"#;

    #[test]
    fn a_record_with_a_union_and_a_map_in_negative_count_blocks() {
        // n = -2 (zigzag 3); s = branch 1 "hi"; m = one block of -1 items (size 4) {"k": 5}.
        let payload = [3, 2, 4, b'h', b'i', 1, 8, 2, b'k', 10, 0];
        let json = decode(RECORD, &payload).unwrap();
        assert_eq!(json, r#"{"n":-2,"s":"hi","m":{"k":5}}"#);
    }

    #[test]
    fn logical_types_and_arrays_are_written_as_documented() {
        let schema = r#"{"type":"record","name":"L","fields":[
            {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}},
            {"name":"u","type":{"type":"string","logicalType":"uuid"}},
            {"name":"p","type":{"type":"fixed","name":"P","size":12,"logicalType":"duration"}},
            {"name":"t","type":{"type":"long","logicalType":"timestamp-millis"}},
            {"name":"l","type":{"type":"long","logicalType":"local-timestamp-micros"}},
            {"name":"a","type":{"type":"array","items":"int"}}]}"#;
        let uuid = b"0f8fad5b-d9cb-469f-a165-70867728950e";
        let mut payload = vec![4, 0xfb, 0x32, 72];
        payload.extend_from_slice(uuid);
        payload.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
        payload.extend_from_slice(&[0, 0, 4, 2, 4, 0]);
        assert_eq!(
            decode(schema, &payload).unwrap(),
            concat!(
                r#"{"d":"-12.30","u":"0f8fad5b-d9cb-469f-a165-70867728950e","#,
                r#""p":{"months":1,"days":2,"millis":3},"t":"1970-01-01T00:00:00.000Z","#,
                r#""l":"1970-01-01T00:00:00.000000","a":[1,2]}"#
            )
        );
    }

    #[test]
    fn every_prefix_and_trailing_bytes_are_errors() {
        let payload = [3, 2, 4, b'h', b'i', 1, 8, 2, b'k', 10, 0];
        for len in 0..payload.len() {
            let error = decode(RECORD, &payload[..len]).unwrap_err();
            let bounded = error.contains("more than the bytes left");
            assert!(error.contains("truncated") || bounded, "{len}: {error}");
        }
        let mut longer = payload.to_vec();
        longer.push(0);
        assert!(decode(RECORD, &longer)
            .unwrap_err()
            .contains("1 bytes left"));
    }

    #[test]
    fn hostile_counts_indexes_and_nesting_are_refused_quickly() {
        let nulls = r#"{"type":"array","items":"null"}"#;
        // A block of 2^62 nulls: zero bytes each, so bounded by count, not by the bytes left.
        let huge = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
        let error = decode(nulls, &huge).unwrap_err();
        assert!(error.contains("more than"), "{error}");
        let longs = r#"{"type":"array","items":"long"}"#;
        assert!(decode(longs, &[200, 1, 0])
            .unwrap_err()
            .contains("more than"));
        let union = r#"["null","int"]"#;
        assert!(decode(union, &[4]).unwrap_err().contains("union index 2"));
        let list = r#"{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}"#;
        let deep = vec![2u8; 10_000];
        assert!(decode(list, &deep).unwrap_err().contains("nested deeper"));
        let enumeration = r#"{"type":"enum","name":"E","symbols":["A"]}"#;
        assert_eq!(decode(enumeration, &[0]).unwrap(), r#""A""#);
        assert!(decode(enumeration, &[2])
            .unwrap_err()
            .contains("enum index 1"));
        assert!(decode(r#""string""#, &[2, 0xff])
            .unwrap_err()
            .contains("UTF-8"));
        assert!(decode(r#""int""#, &[0xfe, 0xff, 0xff, 0xff, 0x1f])
            .unwrap_err()
            .contains("out of range"));
    }
}
