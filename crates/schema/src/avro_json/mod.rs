//! JSON values to Avro binary, reading Avro's JSON encoding as Confluent's
//! kafka-avro-console-producer does: a union's value is tagged with its branch
//! (`{"string": "x"}`, `{"com.acme.Line": {...}}`; `null` alone), bytes and fixed are strings
//! of code points U+0000 to U+00FF (one byte each), enums are their symbol, a record's missing
//! field takes its default, and logical types are written as their underlying type (a `date`
//! is an int, a `timestamp-millis` a long, a `decimal` its bytes). Float and double also take
//! the strings `"NaN"`, `"Infinity"` and `"-Infinity"`.
//!
//! A field's default is in the schema's own notation: a union's default is its first
//! branch's value, untagged.
//!
//! The other notation read, [`Notation::Decoded`], is the one [`crate::avro`] writes: see
//! [`decoded`].

mod decoded;

use std::cell::Cell;
use std::collections::HashMap;

use apache_avro::schema::{Name, Namespace, RecordSchema, Schema};
use serde_json::{Map, Value};

use crate::avro::collect_names;
use crate::misfit::Misfit;

/// Deepest nesting of records, arrays, maps and unions written (deeper than any JSON text
/// serde_json parses; a bound for values built in code).
const MAX_DEPTH: usize = 256;

/// An Avro schema compiled for encoding.
#[derive(Debug)]
pub(crate) struct AvroEncoder {
    nodes: Vec<Node>,
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
    Fixed(usize),
    Enum(Vec<String>),
    Array(NodeId),
    Map(NodeId),
    /// Each branch's tag (its type's name) and node.
    Union(Vec<(String, NodeId)>),
    Record(Vec<Field>),
    /// A logical type over its underlying type's node: written as that type, except in the
    /// decoded notation.
    Logical(Logical, NodeId),
    /// A named type whose node is being compiled (replaced before use).
    Pending,
}

#[derive(Debug)]
struct Field {
    name: String,
    node: NodeId,
    default: Option<Value>,
}

/// Logical types whose decoded notation differs from their underlying type's.
#[derive(Clone, Copy, Debug)]
enum Logical {
    /// Over bytes, or over a fixed of `size` bytes.
    Decimal {
        scale: usize,
        size: Option<usize>,
    },
    Date,
    TimeMillis,
    TimeMicros,
    /// `digits` fraction digits; in UTC (`Z`) or local.
    Timestamp {
        digits: u32,
        utc: bool,
    },
    Duration,
}

/// The JSON notation a value is read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Notation {
    /// Avro's JSON encoding: unions tagged, bytes as code points, logical types as their
    /// underlying type.
    Tagged,
    /// What `ValueDecoder` writes (README, "The JSON mapping"): unions untagged, bytes base64,
    /// logical types formatted.
    Decoded,
    /// A field's default in the schema: a union's is its first branch's value, untagged.
    Default,
}

/// Where a write is: its notation, its depth, and the union branches it may still try and
/// abandon (shared by the whole value: a bound on the work of untagged unions).
#[derive(Clone, Copy)]
struct Walk<'a> {
    notation: Notation,
    depth: usize,
    retries_left: &'a Cell<u32>,
}

impl Walk<'_> {
    fn deeper(self) -> Self {
        Walk {
            depth: self.depth + 1,
            ..self
        }
    }

    fn with(self, notation: Notation) -> Self {
        Walk { notation, ..self }
    }
}

impl AvroEncoder {
    /// Compiles `schema`, whose named references are among `references` (Avro JSON each).
    pub(crate) fn parse(schema: &str, references: &[String]) -> Result<Self, String> {
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
        Ok(AvroEncoder {
            nodes: compiler.nodes,
            root,
        })
    }

    /// Appends the Avro binary encoding of `value`, in `notation`, to `out`.
    pub(crate) fn encode(
        &self,
        value: &Value,
        notation: Notation,
        out: &mut Vec<u8>,
    ) -> Result<(), Misfit> {
        let retries_left = Cell::new(decoded::MAX_UNION_RETRIES);
        let walk = Walk {
            notation,
            depth: 0,
            retries_left: &retries_left,
        };
        self.write(self.root, value, walk, out)
    }

    fn write(
        &self,
        id: NodeId,
        value: &Value,
        walk: Walk<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), Misfit> {
        if walk.depth > MAX_DEPTH {
            return Err(Misfit::new(format!("nested deeper than {MAX_DEPTH}")));
        }
        if walk.notation == Notation::Decoded {
            if let Some(written) = self.write_decoded(id, value, walk, out) {
                return written;
            }
        }
        match (&self.nodes[id], value) {
            (Node::Null, Value::Null) => {}
            (Node::Boolean, Value::Bool(flag)) => out.push(u8::from(*flag)),
            (Node::Int, _) => {
                let int = value.as_i64().and_then(|n| i32::try_from(n).ok());
                push_long(
                    out,
                    i64::from(int.ok_or_else(|| Misfit::expected("int", value))?),
                );
            }
            (Node::Long, _) => push_long(
                out,
                value
                    .as_i64()
                    .ok_or_else(|| Misfit::expected("long", value))?,
            ),
            (Node::Float, _) => {
                let float = floating(value).ok_or_else(|| Misfit::expected("float", value))?;
                out.extend_from_slice(&(float as f32).to_le_bytes());
            }
            (Node::Double, _) => {
                let double = floating(value).ok_or_else(|| Misfit::expected("double", value))?;
                out.extend_from_slice(&double.to_le_bytes());
            }
            (Node::String, Value::String(text)) => {
                push_long(out, text.len() as i64);
                out.extend_from_slice(text.as_bytes());
            }
            (Node::Bytes, Value::String(text)) => {
                push_long(out, text.chars().count() as i64);
                push_code_points(out, text).ok_or_else(|| Misfit::expected(BYTES, value))?;
            }
            (Node::Fixed(size), Value::String(text)) if text.chars().count() == *size => {
                push_code_points(out, text).ok_or_else(|| Misfit::expected(BYTES, value))?;
            }
            (Node::Fixed(size), _) => {
                return Err(Misfit::expected(
                    &format!("{size} bytes as a string"),
                    value,
                ))
            }
            (Node::Enum(symbols), Value::String(text)) => {
                let index = symbols.iter().position(|symbol| symbol == text);
                let index = index.ok_or_else(|| Misfit::expected(&one_of(symbols), value))?;
                push_long(out, index as i64);
            }
            (Node::Array(items), Value::Array(values)) => {
                self.write_array(*items, values, walk, out)?
            }
            (Node::Map(values), Value::Object(entries)) => {
                self.write_map(*values, entries, walk, out)?
            }
            (Node::Union(branches), _) => self.write_union(branches, value, walk, out)?,
            (Node::Record(fields), Value::Object(object)) => {
                self.write_record(fields, object, walk, out)?
            }
            (Node::Logical(_, underlying), _) => self.write(*underlying, value, walk, out)?,
            (node, _) => return Err(Misfit::expected(node.kind(), value)),
        }
        Ok(())
    }

    fn write_array(
        &self,
        items: NodeId,
        values: &[Value],
        walk: Walk<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), Misfit> {
        if !values.is_empty() {
            push_long(out, values.len() as i64);
            for (index, item) in values.iter().enumerate() {
                self.write(items, item, walk.deeper(), out)
                    .map_err(|misfit| misfit.in_item(index))?;
            }
        }
        out.push(0);
        Ok(())
    }

    fn write_map(
        &self,
        values: NodeId,
        entries: &Map<String, Value>,
        walk: Walk<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), Misfit> {
        if !entries.is_empty() {
            push_long(out, entries.len() as i64);
            for (key, item) in entries {
                push_long(out, key.len() as i64);
                out.extend_from_slice(key.as_bytes());
                self.write(values, item, walk.deeper(), out)
                    .map_err(|misfit| misfit.in_entry(key))?;
            }
        }
        out.push(0);
        Ok(())
    }

    /// A union's branch index, then its value: `null` alone, anything else tagged with its
    /// branch's name (a default: the first branch, untagged).
    fn write_union(
        &self,
        branches: &[(String, NodeId)],
        value: &Value,
        walk: Walk<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), Misfit> {
        let (index, inner) = match (walk.notation, value) {
            (Notation::Default, _) => (0, value),
            (_, Value::Null) => {
                let null = branches.iter().position(|(tag, _)| tag == "null");
                (
                    null.ok_or_else(|| Misfit::expected(&tags(branches), value))?,
                    value,
                )
            }
            (_, Value::Object(object)) if object.len() == 1 => {
                let (tag, inner) = object.iter().next().expect("one entry");
                let index = branches.iter().position(|(name, _)| name == tag);
                (
                    index.ok_or_else(|| Misfit::expected(&tags(branches), value))?,
                    inner,
                )
            }
            _ => return Err(Misfit::expected(&tags(branches), value)),
        };
        let Some(&(_, branch)) = branches.get(index) else {
            return Err(Misfit::new("union without branches".into()));
        };
        push_long(out, index as i64);
        self.write(branch, inner, walk.deeper(), out)
    }

    /// The fields in schema order, each from the object or its default; a property that is
    /// no field is an error (a misspelt field name would otherwise go unnoticed).
    fn write_record(
        &self,
        fields: &[Field],
        object: &Map<String, Value>,
        walk: Walk<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), Misfit> {
        let mut used = 0;
        for field in fields {
            let written = match (object.get(&field.name), &field.default) {
                (Some(value), _) => {
                    used += 1;
                    self.write(field.node, value, walk.deeper(), out)
                }
                (None, Some(default)) => {
                    let walk = walk.deeper().with(Notation::Default);
                    self.write(field.node, default, walk, out)
                }
                (None, None) => Err(Misfit::new("missing, and the field has no default".into())),
            };
            written.map_err(|misfit| misfit.in_field(&field.name))?;
        }
        if used < object.len() {
            if let Some(stray) = object
                .keys()
                .find(|key| !fields.iter().any(|field| &field.name == *key))
            {
                let names: Vec<&str> = fields.iter().map(|field| field.name.as_str()).collect();
                let detail = format!("no such field (the record has {})", names.join(", "));
                return Err(Misfit::new(detail).in_field(stray));
            }
        }
        Ok(())
    }
}

const BYTES: &str = "bytes as a string of code points U+0000 to U+00FF";

impl Node {
    /// The expected type, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Boolean => "boolean",
            Node::Int => "int",
            Node::Long => "long",
            Node::Float => "float",
            Node::Double => "double",
            Node::Bytes => BYTES,
            Node::String => "string",
            Node::Fixed(_) => "fixed",
            Node::Enum(_) => "enum symbol",
            Node::Array(_) => "array",
            Node::Map(_) => "map (an object)",
            Node::Union(_) => "union",
            Node::Record(_) => "record (an object)",
            Node::Logical(..) => "logical type",
            Node::Pending => "a type being compiled",
        }
    }
}

/// A number, or one of the strings Avro's JSON encoding uses for the IEEE specials.
fn floating(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => match text.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// Each character as one byte; `None` when one is above U+00FF.
fn push_code_points(out: &mut Vec<u8>, text: &str) -> Option<()> {
    for c in text.chars() {
        out.push(u8::try_from(u32::from(c)).ok()?);
    }
    Some(())
}

fn push_long(out: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.push(zigzag as u8 | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

fn one_of(symbols: &[String]) -> String {
    format!("one of {}", symbols.join(", "))
}

fn tags(branches: &[(String, NodeId)]) -> String {
    let shapes: Vec<String> = branches
        .iter()
        .map(|(tag, _)| match tag.as_str() {
            "null" => "null".to_owned(),
            tag => format!("{{\"{tag}\": ...}}"),
        })
        .collect();
    format!("a union value, one of {}", shapes.join(", "))
}

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

    fn logical(&mut self, logical: Logical, underlying: Node) -> Node {
        Node::Logical(logical, self.add(underlying))
    }

    fn timestamp(&mut self, digits: u32, utc: bool) -> Node {
        self.logical(Logical::Timestamp { digits, utc }, Node::Long)
    }

    fn compile(&mut self, schema: &'s Schema, namespace: &Namespace) -> Result<NodeId, String> {
        let node = match schema {
            Schema::Null => Node::Null,
            Schema::Boolean => Node::Boolean,
            Schema::Int => Node::Int,
            Schema::Long => Node::Long,
            Schema::Date => self.logical(Logical::Date, Node::Int),
            Schema::TimeMillis => self.logical(Logical::TimeMillis, Node::Int),
            Schema::TimeMicros => self.logical(Logical::TimeMicros, Node::Long),
            Schema::TimestampMillis => self.timestamp(3, true),
            Schema::TimestampMicros => self.timestamp(6, true),
            Schema::TimestampNanos => self.timestamp(9, true),
            Schema::LocalTimestampMillis => self.timestamp(3, false),
            Schema::LocalTimestampMicros => self.timestamp(6, false),
            Schema::LocalTimestampNanos => self.timestamp(9, false),
            Schema::Float => Node::Float,
            Schema::Double => Node::Double,
            Schema::Bytes | Schema::BigDecimal => Node::Bytes,
            Schema::String | Schema::Uuid => Node::String,
            Schema::Duration => self.logical(Logical::Duration, Node::Fixed(12)),
            Schema::Decimal(decimal) => {
                let size = match decimal.inner.as_ref() {
                    Schema::Fixed(fixed) => Some(fixed.size),
                    _ => None,
                };
                let underlying = self.compile(&decimal.inner, namespace)?;
                let scale = decimal.scale;
                Node::Logical(Logical::Decimal { scale, size }, underlying)
            }
            Schema::Array(array) => Node::Array(self.compile(&array.items, namespace)?),
            Schema::Map(map) => Node::Map(self.compile(&map.types, namespace)?),
            Schema::Union(union) => {
                let mut branches = Vec::with_capacity(union.variants().len());
                for variant in union.variants() {
                    let tag = self.tag(variant, namespace);
                    branches.push((tag, self.compile(variant, namespace)?));
                }
                Node::Union(branches)
            }
            Schema::Enum(enumeration) => {
                let name = enumeration.name.fully_qualified_name(namespace);
                return Ok(self.named(name, Node::Enum(enumeration.symbols.clone())));
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

    /// A union branch's tag: its full name for a named type, else its (underlying) type.
    fn tag(&self, schema: &Schema, namespace: &Namespace) -> String {
        let full = |name: &Name| name.fully_qualified_name(namespace).fullname(None);
        match schema {
            Schema::Null => "null".into(),
            Schema::Boolean => "boolean".into(),
            Schema::Int | Schema::Date | Schema::TimeMillis => "int".into(),
            Schema::Float => "float".into(),
            Schema::Double => "double".into(),
            Schema::Bytes | Schema::BigDecimal => "bytes".into(),
            Schema::String | Schema::Uuid => "string".into(),
            Schema::Duration => "duration".into(),
            Schema::Decimal(decimal) => self.tag(&decimal.inner, namespace),
            Schema::Array(_) => "array".into(),
            Schema::Map(_) => "map".into(),
            Schema::Union(_) => "union".into(),
            Schema::Enum(enumeration) => full(&enumeration.name),
            Schema::Fixed(fixed) => full(&fixed.name),
            Schema::Record(record) => full(&record.name),
            Schema::Ref { name } => full(name),
            _ => "long".into(),
        }
    }

    fn compile_record(
        &mut self,
        record: &'s RecordSchema,
        namespace: &Namespace,
    ) -> Result<NodeId, String> {
        let name = record.name.fully_qualified_name(namespace);
        let id = self.named(name.clone(), Node::Pending);
        let mut fields = Vec::with_capacity(record.fields.len());
        for field in &record.fields {
            fields.push(Field {
                name: field.name.clone(),
                node: self.compile(&field.schema, &name.namespace)?,
                default: field.default.clone(),
            });
        }
        self.nodes[id] = Node::Record(fields);
        Ok(id)
    }

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
