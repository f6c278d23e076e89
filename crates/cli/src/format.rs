//! Output formats shared by `krec decode` and `krec consume`.
//!
//! One [`RecordWriter`] turns decoded records into bytes in one of three
//! [`OutputFormat`]s:
//! - JSON lines (one object per record, lossless for non-UTF-8 bytes, see [`json`]),
//! - kcat-style templates such as `'%o %k %s\n'` (see [`template`]),
//! - raw values with a delimiter (see [`raw`]).
//!
//! Keys and values in the Schema Registry wire format are decoded to JSON first with `-s`
//! (see [`schema`]).
//!
//! Records are rendered into one reused buffer that is written out in large
//! chunks, so the hot path does no allocation and no formatting machinery per
//! record. The JSON schema and the template tokens are a public interface,
//! documented in the README's "Output formats" section.

mod args;
mod base64;
mod batch_record;
mod escape;
mod filter;
pub mod json;
pub mod raw;
mod record;
pub mod schema;
pub mod template;
mod writer;

pub use args::FormatArgs;
pub use filter::{FilterArgs, OffsetWindow, RecordFilter};
pub use record::{ControlMarker, RecordContext, RecordFields};
pub use schema::{RegistryProperties, SchemaArgs};
pub use template::Template;
pub use writer::{OutputFormat, RecordWriter};
