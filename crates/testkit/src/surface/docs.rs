//! What the crate docs' "Public surface" section says: which names it links, and whether
//! its count of the front door's names is right.

use std::collections::BTreeSet;
use std::path::Path;

/// The text of the crate docs (`//!` lines of `lib_rs`) from `# Public surface` to the next
/// heading.
pub fn public_surface_section(lib_rs: &Path) -> String {
    let source = std::fs::read_to_string(lib_rs).expect("read lib.rs");
    let mut inside = false;
    let mut section = String::new();
    for line in source.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.strip_prefix(' ').unwrap_or(doc);
        if doc.starts_with('#') {
            inside = doc.trim_start_matches('#').trim() == "Public surface";
            continue;
        }
        if inside {
            section.push_str(doc);
            section.push('\n');
        }
    }
    section
}

/// A "The front door is N names: ..." sentence whose N is not the number of names it links.
pub(super) fn front_door_miscounted(section: &str) -> Option<String> {
    const NUMBERS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    let flat = section.replace('\n', " ");
    let start = flat.find("The front door is ")?;
    let sentence = &flat[start + "The front door is ".len()..];
    let sentence = &sentence[..sentence.find(". ").unwrap_or(sentence.len())];
    let (count, names) = sentence.split_once(" names:")?;
    let said = NUMBERS.iter().position(|n| *n == count.trim())?;
    let linked = names.matches("[`").count();
    (said != linked)
        .then(|| format!("the front door is said to be {said} names; it links {linked}"))
}

/// Whether `text` names `name` in code: a link (`[`name`]`, or a path ending in it:
/// `[`group::name`]`) or, for an item behind a cargo feature that the docs cannot link
/// without it, a code span (`` `sasl::Gssapi` ``).
pub(super) fn links(text: &str, name: &str) -> bool {
    text.match_indices(&format!("{name}`"))
        .any(|(at, _)| match text[..at].rfind('`') {
            Some(open) => {
                let between = &text[open + 1..at];
                between.is_empty() || between.ends_with("::") && !between.contains(' ')
            }
            None => false,
        })
}

/// The last path segment of every line that is not a member (`mod`, `struct`, `enum`,
/// `trait`, `fn`, `const`, `static`, `type`, `use`), once each; for a constant, its module too.
pub(super) fn top_level_names(lines: &[String]) -> BTreeSet<(String, Option<String>)> {
    lines
        .iter()
        .filter(|line| !line.starts_with("  "))
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let kind = words.next()?;
            let path = words.next()?;
            let path = path.split(['<', '(']).next()?.trim_end_matches(':');
            let mut segments = path.rsplit("::");
            let name = segments.next()?.to_owned();
            let module = (kind == "const").then(|| segments.next().map(str::to_owned));
            Some((name, module.flatten()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_names_an_item_by_its_name_or_a_path_ending_in_it() {
        let text = "[`Consumer`], [`group::GroupProgress`] and `Plain`, [`a b::Error`], `x`y";
        assert!(links(text, "Consumer"));
        assert!(links(text, "GroupProgress"));
        assert!(
            !links(text, "Progress"),
            "a suffix of a name is not the name"
        );
        assert!(
            links(text, "Plain"),
            "a code span, for an item behind a feature"
        );
        assert!(!links(text, "Error"), "not a path");
        assert!(!links(text, "y"), "outside the span");
    }

    #[test]
    fn the_front_door_count_is_the_number_of_names_it_links() {
        let right = "The front door is two names: [`A`],\n[`B`]. Then [`C`].";
        assert_eq!(front_door_miscounted(right), None);
        let wrong = "The front door is three names: [`A`], [`B`]. Then [`C`].";
        assert!(front_door_miscounted(wrong).is_some());
    }
}
