//! Where and how a JSON value does not fit its schema: the path to the part at fault
//! (`.order.lines[2].sku`) and what was expected there.

use std::fmt::Write as _;

use serde_json::Value;

/// Longest rendering of an offending value in a message.
const MAX_SHOWN: usize = 60;

/// A value that does not fit, with the path from the value's root to the part at fault.
#[derive(Debug)]
pub(crate) struct Misfit {
    /// Innermost first: pushed while the error travels out of the recursion.
    segments: Vec<Segment>,
    detail: String,
}

#[derive(Debug)]
enum Segment {
    Field(String),
    Index(usize),
    Key(String),
}

impl Misfit {
    /// A misfit at the current place.
    pub(crate) fn new(detail: String) -> Self {
        Misfit {
            segments: Vec::new(),
            detail,
        }
    }

    /// `expected EXPECTED, got VALUE`.
    #[cold]
    pub(crate) fn expected(expected: &str, got: &Value) -> Self {
        Misfit::new(format!("expected {expected}, got {}", shown(got)))
    }

    /// The same misfit, inside the record field or object property `name`.
    pub(crate) fn in_field(mut self, name: &str) -> Self {
        self.segments.push(Segment::Field(name.to_owned()));
        self
    }

    /// The same misfit, inside array item `index`.
    pub(crate) fn in_item(mut self, index: usize) -> Self {
        self.segments.push(Segment::Index(index));
        self
    }

    /// The same misfit, inside the map entry `key`.
    pub(crate) fn in_entry(mut self, key: &str) -> Self {
        self.segments.push(Segment::Key(key.to_owned()));
        self
    }

    /// The path from the root (`.a.b[2]`, `.` for the root itself) and the detail.
    pub(crate) fn into_parts(self) -> (String, String) {
        let mut path = String::new();
        for segment in self.segments.iter().rev() {
            match segment {
                Segment::Field(name) => {
                    path.push('.');
                    path.push_str(name);
                }
                Segment::Index(index) => {
                    let _ = write!(path, "[{index}]");
                }
                Segment::Key(key) => {
                    let _ = write!(path, "[{}]", Value::String(key.clone()));
                }
            }
        }
        if path.is_empty() {
            path.push('.');
        }
        (path, self.detail)
    }
}

/// A value as a message shows it: its JSON text, cut short when long.
pub(crate) fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= MAX_SHOWN {
        return text;
    }
    let mut end = MAX_SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::Misfit;
    use serde_json::json;

    #[test]
    fn paths_read_from_the_root_and_long_values_are_cut() {
        let misfit = Misfit::expected("long", &json!("x"))
            .in_field("sku")
            .in_item(2)
            .in_entry("a.b")
            .in_field("order");
        let (path, detail) = misfit.into_parts();
        assert_eq!(path, r#".order["a.b"][2].sku"#);
        assert_eq!(detail, r#"expected long, got "x""#);
        assert_eq!(Misfit::new("no".into()).into_parts().0, ".");
        let long = json!("é".repeat(100));
        let (_, detail) = Misfit::expected("int", &long).into_parts();
        assert!(detail.ends_with("..."), "{detail}");
        assert!(detail.len() < 90, "{detail}");
    }
}
