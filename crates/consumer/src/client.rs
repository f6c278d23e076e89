//! Kafka wire client (owned by the consume work; placeholder).
