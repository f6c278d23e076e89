//! Output formats (owned by the formats work; placeholder).
