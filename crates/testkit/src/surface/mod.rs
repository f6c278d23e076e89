//! A library crate's public surface, listed from its source, and the check that its crate docs
//! name all of it (feature `surface`).
//!
//! [`listing`] parses the crate with `syn` from `src/lib.rs` down, follows `pub mod` and
//! `pub use` (to the item they name, in this crate or another), and writes one line per public
//! item: modules, types, traits, functions, constants, and the members of public types
//! (inherent `pub fn`s and constants, `pub` fields, variants, trait methods), each with its
//! signature. [`check`] compares that listing with the one checked in next to the crate and
//! checks that the crate docs' "Public surface" section names every public name that is not a
//! member (a link; a code span for an item behind a cargo feature; a constant by its module),
//! and that its "The front door is N names: ..." sentence links N names. Stable Rust, no
//! rustdoc JSON, a second or so: `cargo test` runs it.
//!
//! What it does not see: items made public by a macro whose body it cannot read (it reads the
//! `pub const|fn|struct NAME` of `macro_rules!` bodies in the module that invokes them) and
//! trait implementations (what a type implements is not listed).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use quote::ToTokens;

mod docs;

pub use docs::public_surface_section;
use docs::{front_door_miscounted, links, top_level_names};

/// One module of the crate: where it is, whether a path from the crate root reaches it, and
/// what it holds.
struct Module {
    path: Vec<String>,
    reachable: bool,
    items: Vec<syn::Item>,
}

/// What a public name stands for.
#[derive(Clone)]
enum Target {
    /// An item defined in this crate: its module and name.
    Local(Vec<String>, String),
    /// An item of another crate, as the `use` spells it.
    Foreign(String),
}

/// The public surface of the crate in `crate_dir` (its `Cargo.toml`'s directory), named
/// `crate_name` (with underscores), one sorted line per item.
pub fn listing(crate_dir: &Path, crate_name: &str) -> Vec<String> {
    let mut modules = Vec::new();
    load(
        &crate_dir.join("src/lib.rs"),
        Vec::new(),
        true,
        &mut modules,
    );
    let surface = Surface::new(modules, crate_name);
    surface.lines()
}

/// Fails, with what differs, when the listing of the crate in `crate_dir` is not the one in
/// `listing_file` (relative to `crate_dir`), or when a public name is missing from the
/// "Public surface" section of the crate docs. With `KREC_BLESS_SURFACE=1` in the
/// environment it rewrites `listing_file` instead of comparing.
pub fn check(crate_dir: &Path, crate_name: &str, listing_file: &str) {
    let lines = listing(crate_dir, crate_name);
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let file = crate_dir.join(listing_file);
    if std::env::var_os("KREC_BLESS_SURFACE").is_some() {
        std::fs::write(&file, &text).expect("write the listing");
    }
    let kept = std::fs::read_to_string(&file).unwrap_or_default();
    let kept: BTreeSet<&str> = kept.lines().collect();
    let now: BTreeSet<&str> = lines.iter().map(String::as_str).collect();
    let mut problems = String::new();
    for line in now.difference(&kept) {
        let _ = writeln!(problems, "  new, not in {listing_file}: {line}");
    }
    for line in kept.difference(&now) {
        let _ = writeln!(problems, "  in {listing_file}, gone: {line}");
    }
    let section = public_surface_section(&crate_dir.join("src/lib.rs"));
    if let Some(problem) = front_door_miscounted(&section) {
        let _ = writeln!(problems, "  {problem}");
    }
    for (name, module) in top_level_names(&lines) {
        // A constant is named by its module's link too (error-code tables, limits).
        let by_module = module.is_some_and(|module| links(&section, &module));
        if !links(&section, &name) && !by_module {
            let _ = writeln!(
                problems,
                "  not named in the crate docs' \"Public surface\" section: [`{name}`]"
            );
        }
    }
    assert!(
        problems.is_empty(),
        "the public surface of {crate_name} changed:\n{problems}Say so in the crate docs' \
         \"Public surface\" section, then rewrite {listing_file} with KREC_BLESS_SURFACE=1 \
         cargo test -p {} --test public_surface",
        crate_name.replace('_', "-")
    );
}

/// Parses `file` and the files of the modules it declares, depth first.
fn load(file: &Path, path: Vec<String>, reachable: bool, modules: &mut Vec<Module>) {
    let source = std::fs::read_to_string(file)
        .unwrap_or_else(|error| panic!("read {}: {error}", file.display()));
    let parsed = syn::parse_file(&source)
        .unwrap_or_else(|error| panic!("parse {}: {error}", file.display()));
    let dir = module_dir(file);
    walk(parsed.items, &dir, path, reachable, modules);
}

/// Where the files of `file`'s submodules are: next to `lib.rs` and `mod.rs`, else in the
/// directory named after the file.
fn module_dir(file: &Path) -> PathBuf {
    let parent = file.parent().expect("a file in a directory");
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("lib" | "mod") => parent.to_path_buf(),
        Some(stem) => parent.join(stem),
        None => parent.to_path_buf(),
    }
}

fn walk(
    items: Vec<syn::Item>,
    dir: &Path,
    path: Vec<String>,
    reachable: bool,
    modules: &mut Vec<Module>,
) {
    let mut kept = Vec::new();
    for item in items {
        if is_test_only(attrs(&item)) {
            continue;
        }
        if let syn::Item::Mod(module) = &item {
            let name = module.ident.to_string();
            let mut child = path.clone();
            child.push(name.clone());
            let child_reachable = reachable && is_pub(&module.vis) && !is_hidden(&module.attrs);
            match &module.content {
                Some((_, inline)) => walk(
                    inline.clone(),
                    &dir.join(&name),
                    child,
                    child_reachable,
                    modules,
                ),
                None => {
                    let flat = dir.join(format!("{name}.rs"));
                    let file = if flat.exists() {
                        flat
                    } else {
                        dir.join(&name).join("mod.rs")
                    };
                    load(&file, child, child_reachable, modules);
                }
            }
        }
        kept.push(item);
    }
    modules.push(Module {
        path,
        reachable,
        items: kept,
    });
}

fn attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => &[],
    }
}

/// `#[cfg(test)]` (and `#[cfg(all(test, ...))]`): not part of the library.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && {
            let text = attr.meta.to_token_stream().to_string();
            text == "cfg (test)" || text.starts_with("cfg (all (test ,")
        }
    })
}

/// `#[doc(hidden)]`: public for a reason other than the API (fuzz harnesses).
fn is_hidden(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("doc") && attr.meta.to_token_stream().to_string() == "doc (hidden)"
    })
}

fn is_pub(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
}

/// Tokens as one line, spaced as people write them.
fn tokens(node: &impl ToTokens) -> String {
    let raw = node.to_token_stream().to_string();
    let mut text = raw;
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" ,", ","),
        ("& '", "&'"),
        ("& ", "&"),
        (" < ", "<"),
        ("< ", "<"),
        (" >", ">"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
        (" :", ":"),
        ("# ", "#"),
        (" (", "("),
        ("mut self", "mut self"),
        ("- > ", "-> "),
        ("' ", "'"),
    ] {
        text = text.replace(from, to);
    }
    text
}

/// The crate's modules, indexed, and what its public names resolve to.
struct Surface {
    crate_name: String,
    modules: Vec<Module>,
    by_path: BTreeMap<Vec<String>, usize>,
}

impl Surface {
    fn new(modules: Vec<Module>, crate_name: &str) -> Self {
        let by_path = modules
            .iter()
            .enumerate()
            .map(|(index, module)| (module.path.clone(), index))
            .collect();
        Self {
            crate_name: crate_name.to_owned(),
            modules,
            by_path,
        }
    }

    fn module(&self, path: &[String]) -> Option<&Module> {
        self.by_path.get(path).map(|&index| &self.modules[index])
    }

    fn display(&self, path: &[String], name: &str) -> String {
        let mut text = self.crate_name.clone();
        for segment in path.iter().chain(std::iter::once(&name.to_owned())) {
            text.push_str("::");
            text.push_str(segment);
        }
        text
    }

    /// Every line of the listing, sorted.
    fn lines(&self) -> Vec<String> {
        let mut lines = BTreeSet::new();
        // Each public item defined here, with every path that reaches it.
        let mut paths: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
        for module in self.modules.iter().filter(|m| m.reachable) {
            for item in &module.items {
                if let syn::Item::Macro(mac) = item {
                    for (kind, name) in macro_pub_items(mac) {
                        lines.insert(format!("{kind} {}", self.display(&module.path, &name)));
                    }
                    continue;
                }
                let Some(name) = public_name(item) else {
                    continue;
                };
                let at = self.display(&module.path, &name);
                if let syn::Item::Mod(_) = item {
                    lines.insert(format!("mod {at}"));
                } else {
                    paths
                        .entry((module.path.clone(), name))
                        .or_default()
                        .push(at);
                }
            }
            for (name, target) in self.reexports(module) {
                let at = self.display(&module.path, &name);
                match target {
                    Target::Foreign(path) => {
                        lines.insert(format!("use {at} = {path}"));
                    }
                    Target::Local(path, defined) => {
                        paths.entry((path, defined)).or_default().push(at);
                    }
                }
            }
        }
        for ((path, name), ats) in paths {
            let Some(item) = self
                .module(&path)
                .and_then(|m| m.items.iter().find(|i| defines(i, &name)))
            else {
                // A module re-exported.
                for at in ats {
                    lines.insert(format!("mod {at}"));
                }
                continue;
            };
            for at in &ats {
                lines.insert(self.head(item, at));
            }
            // Members once, under the shortest path.
            if let Some(at) = ats.iter().min_by_key(|at| (at.len(), (*at).clone())) {
                self.member_lines(&name, item, at, &mut lines);
            }
        }
        lines.into_iter().collect()
    }

    /// The line of an item itself: its kind, path and signature.
    fn head(&self, item: &syn::Item, at: &str) -> String {
        match item {
            syn::Item::Struct(s) => format!("struct {at}{}", tokens(&s.generics)),
            syn::Item::Enum(e) => format!("enum {at}{}", tokens(&e.generics)),
            syn::Item::Trait(t) => format!("trait {at}{}", tokens(&t.generics)),
            syn::Item::Fn(f) => format!("fn {at}{}", signature_tail(&f.sig)),
            syn::Item::Const(c) => format!("const {at}: {}", tokens(&c.ty)),
            syn::Item::Static(s) => format!("static {at}: {}", tokens(&s.ty)),
            syn::Item::Type(t) => format!("type {at} = {}", tokens(&t.ty)),
            _ => format!("item {at}"),
        }
    }

    /// Fields, variants, trait methods, and the inherent public functions and constants of
    /// `name` defined in `path`, from every `impl` of the crate.
    fn member_lines(&self, name: &str, item: &syn::Item, at: &str, lines: &mut BTreeSet<String>) {
        match item {
            syn::Item::Struct(s) => {
                for (index, field) in s.fields.iter().enumerate() {
                    if is_pub(&field.vis) {
                        let field_name = field
                            .ident
                            .as_ref()
                            .map_or_else(|| index.to_string(), ToString::to_string);
                        lines.insert(format!("  field {at}.{field_name}: {}", tokens(&field.ty)));
                    }
                }
            }
            syn::Item::Enum(e) => {
                for variant in &e.variants {
                    let fields = if variant.fields.is_empty() {
                        String::new()
                    } else {
                        tokens(&variant.fields)
                    };
                    lines.insert(format!("  variant {at}::{}{fields}", variant.ident));
                }
            }
            syn::Item::Trait(t) => {
                for member in &t.items {
                    match member {
                        syn::TraitItem::Fn(f) => {
                            lines.insert(format!(
                                "  fn {at}::{}{}",
                                f.sig.ident,
                                signature_tail(&f.sig)
                            ));
                        }
                        syn::TraitItem::Type(ty) => {
                            lines.insert(format!("  type {at}::{}", ty.ident));
                        }
                        syn::TraitItem::Const(c) => {
                            lines.insert(format!("  const {at}::{}: {}", c.ident, tokens(&c.ty)));
                        }
                        _ => {}
                    }
                }
                return;
            }
            _ => return,
        }
        for module in &self.modules {
            for item in &module.items {
                let syn::Item::Impl(block) = item else {
                    continue;
                };
                if block.trait_.is_some() || self_name(&block.self_ty).as_deref() != Some(name) {
                    continue;
                }
                for member in &block.items {
                    match member {
                        syn::ImplItem::Fn(f) if is_pub(&f.vis) && !is_hidden(&f.attrs) => {
                            lines.insert(format!(
                                "  fn {at}::{}{}",
                                f.sig.ident,
                                signature_tail(&f.sig)
                            ));
                        }
                        syn::ImplItem::Const(c) if is_pub(&c.vis) => {
                            lines.insert(format!("  const {at}::{}: {}", c.ident, tokens(&c.ty)));
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// The `pub use`s of `module`, each name with what it stands for.
    fn reexports(&self, module: &Module) -> Vec<(String, Target)> {
        let mut found = Vec::new();
        for item in &module.items {
            let syn::Item::Use(using) = item else {
                continue;
            };
            if !is_pub(&using.vis) || is_hidden(&using.attrs) {
                continue;
            }
            let mut flat = Vec::new();
            flatten(&using.tree, Vec::new(), &mut flat);
            for (segments, alias) in flat {
                if let Some(target) = self.resolve(&module.path, &segments) {
                    found.push((alias, target));
                }
            }
        }
        found
    }

    /// What `segments`, as a `use` in the module at `from` spells it, names.
    fn resolve(&self, from: &[String], segments: &[String]) -> Option<Target> {
        let (first, rest) = segments.split_first()?;
        if rest.is_empty() {
            // `pub use other_crate;` (a local module re-exported by name is listed as such).
            let mut child = from.to_vec();
            child.push(first.clone());
            return Some(if self.module(&child).is_some() {
                Target::Local(from.to_vec(), first.clone())
            } else {
                Target::Foreign(first.clone())
            });
        }
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => from.to_vec(),
            "super" => from[..from.len().saturating_sub(1)].to_vec(),
            _ => {
                let mut child = from.to_vec();
                child.push(first.clone());
                if self.module(&child).is_some() {
                    child
                } else {
                    return Some(Target::Foreign(segments.join("::")));
                }
            }
        };
        let (last, middle) = rest.split_last()?;
        for segment in middle {
            if segment == "super" {
                base.pop();
            } else {
                base.push(segment.clone());
            }
        }
        let module = self.module(&base)?;
        if module.items.iter().any(|item| defines(item, last)) {
            return Some(Target::Local(base, last.clone()));
        }
        // Re-exported there in turn.
        let reexported = self
            .reexports(module)
            .into_iter()
            .find(|(name, _)| name == last)
            .map(|(_, target)| target);
        if reexported.is_some() {
            return reexported;
        }
        // A private `use` in that module.
        for item in &module.items {
            let syn::Item::Use(using) = item else {
                continue;
            };
            let mut flat = Vec::new();
            flatten(&using.tree, Vec::new(), &mut flat);
            if let Some((path, _)) = flat.into_iter().find(|(_, alias)| alias == last) {
                return self.resolve(&module.path, &path);
            }
        }
        Some(Target::Local(base, last.clone()))
    }
}

/// `use` trees as paths, each with the name it binds.
fn flatten(tree: &syn::UseTree, prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut prefix = prefix;
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix;
            if name == "self" {
                let alias = path.last().cloned().unwrap_or_default();
                out.push((path, alias));
            } else {
                path.push(name.clone());
                out.push((path, name));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix;
            path.push(r.ident.to_string());
            out.push((path, r.rename.to_string()));
        }
        syn::UseTree::Glob(_) => {
            out.push((prefix, "*".to_owned()));
        }
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                flatten(tree, prefix.clone(), out);
            }
        }
    }
}

/// The name a public item defines (none for `impl`s, `use`s and private items).
fn public_name(item: &syn::Item) -> Option<String> {
    let (vis, ident) = match item {
        syn::Item::Const(i) => (&i.vis, &i.ident),
        syn::Item::Enum(i) => (&i.vis, &i.ident),
        syn::Item::Fn(i) => (&i.vis, &i.sig.ident),
        syn::Item::Mod(i) => (&i.vis, &i.ident),
        syn::Item::Static(i) => (&i.vis, &i.ident),
        syn::Item::Struct(i) => (&i.vis, &i.ident),
        syn::Item::Trait(i) => (&i.vis, &i.ident),
        syn::Item::Type(i) => (&i.vis, &i.ident),
        _ => return None,
    };
    (is_pub(vis) && !is_hidden(attrs(item))).then(|| ident.to_string())
}

/// Whether `item` defines `name`, public or not.
fn defines(item: &syn::Item, name: &str) -> bool {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        _ => return false,
    };
    ident == name
}

/// `impl Name<..>`'s `Name`.
fn self_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// A signature after its name: `async`, generics, inputs, output.
fn signature_tail(sig: &syn::Signature) -> String {
    let inputs: Vec<String> = sig.inputs.iter().map(tokens).collect();
    let output = match &sig.output {
        syn::ReturnType::Default => String::new(),
        syn::ReturnType::Type(_, ty) => format!(" -> {}", tokens(ty)),
    };
    let asyncness = if sig.asyncness.is_some() {
        " (async)"
    } else {
        ""
    };
    let where_clause = sig
        .generics
        .where_clause
        .as_ref()
        .map(|w| format!(" {}", tokens(w)))
        .unwrap_or_default();
    format!(
        "{}({}){output}{where_clause}{asyncness}",
        tokens(&sig.generics),
        inputs.join(", ")
    )
}

/// `pub const NAME`, `pub fn NAME`, ... written in a `macro_rules!` body: the items it makes
/// where it is invoked (this module, as used here).
fn macro_pub_items(mac: &syn::ItemMacro) -> Vec<(String, String)> {
    if !mac.mac.path.is_ident("macro_rules") {
        return Vec::new();
    }
    let words: Vec<String> = mac
        .mac
        .tokens
        .to_string()
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let mut found = Vec::new();
    for window in words.windows(3) {
        if window[0] == "pub"
            && matches!(
                window[1].as_str(),
                "const" | "fn" | "struct" | "enum" | "static"
            )
        {
            found.push((window[1].clone(), window[2].clone()));
        }
    }
    found
}
