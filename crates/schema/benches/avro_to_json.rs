//! The Avro walk alone: a ten-field record (the shape of `scripts/bench-schema.sh`'s topic),
//! encoded by apache-avro, decoded to JSON text by krec-schema.
//!
//!     cargo bench -p krec-schema --bench avro_to_json

use apache_avro::types::{Record, Value};
use apache_avro::Schema;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use krec_schema::avro::AvroSchema;

const SCHEMA: &str = r#"{"type": "record", "name": "Tick", "fields": [
    {"name": "id", "type": "long"}, {"name": "account", "type": "string"},
    {"name": "symbol", "type": "string"}, {"name": "price", "type": "double"},
    {"name": "quantity", "type": "int"},
    {"name": "side", "type": {"type": "enum", "name": "Side", "symbols": ["BUY", "SELL"]}},
    {"name": "venue", "type": ["null", "string"]},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "note", "type": "string"},
    {"name": "flags", "type": {"type": "array", "items": "int"}}]}"#;

fn payloads(schema: &Schema, count: i64) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let mut record = Record::new(schema).unwrap();
            record.put("id", i);
            record.put("account", format!("acct-{:06}", i % 1000));
            record.put("symbol", ["AAPL", "MSFT", "GOOG"][(i % 3) as usize]);
            record.put("price", 100.0 + (i % 1000) as f64 / 8.0);
            record.put("quantity", (i % 500) as i32);
            record.put(
                "side",
                Value::Enum((i % 2) as u32, ["BUY", "SELL"][(i % 2) as usize].into()),
            );
            let venue = if i % 5 == 0 {
                Value::Union(0, Box::new(Value::Null))
            } else {
                Value::Union(1, Box::new(Value::String("XNAS".into())))
            };
            record.put("venue", venue);
            record.put("at", Value::TimestampMillis(1_704_067_200_000 + i));
            record.put("note", "n".repeat(60 + (i % 40) as usize));
            let flags = [i % 7, i % 11, 3].map(|f| Value::Int(f as i32)).to_vec();
            record.put("flags", Value::Array(flags));
            apache_avro::to_avro_datum(schema, record).unwrap()
        })
        .collect()
}

fn avro_to_json(c: &mut Criterion) {
    let schema = Schema::parse_str(SCHEMA).unwrap();
    let payloads = payloads(&schema, 1000);
    let compiled = AvroSchema::parse(SCHEMA, &[]).unwrap();
    let mut group = c.benchmark_group("avro_to_json");
    group.throughput(Throughput::Elements(payloads.len() as u64));
    let mut out = Vec::with_capacity(1 << 20);
    group.bench_function("tick_1000_records", |b| {
        b.iter(|| {
            out.clear();
            for payload in &payloads {
                compiled.to_json(payload, &mut out).unwrap();
            }
            out.len()
        })
    });
    group.finish();
}

criterion_group!(benches, avro_to_json);
criterion_main!(benches);
