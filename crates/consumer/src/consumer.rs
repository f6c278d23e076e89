//! Fetch pipeline and async consumer API (owned by the consume work; placeholder).
