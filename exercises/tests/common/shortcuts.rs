//! The shortcut checks: whether an exercise's solution reaches the course's own
//! version of what it asks for.
//!
//! * `assert_not_called`, at run time: the lesson's functions an exercise replaces
//!   carry `#[counted]` (the `counted` crate), so a call counts however it was
//!   reached (a closure, a helper module path, a re-export, a fn pointer).
//! * `assert_not_in_source`, for libtorch's own functions and types, which the course
//!   cannot count (`scaled_dot_product_attention`, `cross_entropy_loss`, `VarStore`):
//!   the exercise files are parsed with `syn`, and the region's code is followed,
//!   by name, into every item of the exercise files it names (helpers, constants,
//!   methods, macros, modules), through `use … as` renames anywhere in those files.
use std::collections::BTreeSet;
use std::sync::Once;

use counted as probe;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::Visit;

use super::{region_code, shortcut_message};

/// Every exercise file, by module name: an exercise's code can reach into another
/// file (`use crate::ch12_sdpa_bench::helper`), and a helper or a renamed import
/// there counts as its own.
pub const EXERCISE_FILES: &[(&str, &str)] = &[
    (
        "ch01_embedding",
        include_str!("../../src/ch01_embedding.rs"),
    ),
    (
        "ch02_attention",
        include_str!("../../src/ch02_attention.rs"),
    ),
    (
        "ch03_feed_forward",
        include_str!("../../src/ch03_feed_forward.rs"),
    ),
    ("ch04_encoder", include_str!("../../src/ch04_encoder.rs")),
    ("ch05_decoder", include_str!("../../src/ch05_decoder.rs")),
    (
        "ch06_transformer",
        include_str!("../../src/ch06_transformer.rs"),
    ),
    (
        "ch07_mask_tests",
        include_str!("../../src/ch07_mask_tests.rs"),
    ),
    (
        "ch08_reverse_data",
        include_str!("../../src/ch08_reverse_data.rs"),
    ),
    (
        "ch09_train_reverse",
        include_str!("../../src/ch09_train_reverse.rs"),
    ),
    (
        "ch10_greedy_decode",
        include_str!("../../src/ch10_greedy_decode.rs"),
    ),
    (
        "ch11_cross_attention",
        include_str!("../../src/ch11_cross_attention.rs"),
    ),
    (
        "ch12_sdpa_bench",
        include_str!("../../src/ch12_sdpa_bench.rs"),
    ),
    ("ch13_ablation", include_str!("../../src/ch13_ablation.rs")),
    ("ch14_dates", include_str!("../../src/ch14_dates.rs")),
];

/// The crate's module list, to check that `EXERCISE_FILES` names every file.
const EXERCISE_LIB: &str = include_str!("../../src/lib.rs");

/// Runs `run` (the exercise, on any input) and fails when it called one of the
/// counted functions of `calls`: (the function's name as `#[counted]` reports it,
/// what to write instead). An exercise that asks for a thing by hand is not done by
/// calling the course's version of it, though the numbers come out right and every
/// other test of the exercise passes.
#[track_caller]
pub fn assert_not_called<R>(
    id: &str,
    calls: &[(&str, &str)],
    run: impl FnOnce() -> R,
) {
    let (_, counts) = probe::watch(run);
    for (call, instead) in calls {
        let n = counts.of(call);
        if n > 0 {
            let found = format!(
                "{id} called the course's `{call}` ({n} time{} while the test ran): that is \
                 the course's own version of what this exercise asks you to write",
                if n == 1 { "" } else { "s" }
            );
            panic!("{}", shortcut_message(&found, instead));
        }
    }
}

/// Fails when the code of exercise `id` reaches one of `calls`, libtorch's names
/// that no counter sees: (the name, what to write instead). `source` is the
/// exercise's file. See `forbidden_uses` for what is followed.
#[track_caller]
pub fn assert_not_in_source(source: &str, id: &str, calls: &[(&str, &str)]) {
    let _ = region_code(source, id); // a blank exercise fails at its todo!()
    check_the_reader();
    assert!(
        EXERCISE_FILES.iter().any(|(_, text)| *text == source),
        "test bug: {id}'s file is not in EXERCISE_FILES"
    );
    let names: Vec<&str> = calls.iter().map(|(c, _)| *c).collect();
    if let Some(hit) = forbidden_uses(EXERCISE_FILES, id, &names).first() {
        let instead = calls.iter().find(|(c, _)| *c == hit.call).unwrap().1;
        let via = if hit.written == hit.call {
            String::new()
        } else {
            format!(" (written `{}`)", hit.written)
        };
        let found = format!(
            "{id} calls `{}`{via} in {}: that is libtorch's version of what this \
             exercise asks you to write",
            hit.call, hit.place
        );
        panic!("{}", shortcut_message(&found, instead));
    }
}

/// A forbidden name reached from a region.
#[derive(Debug, Clone, PartialEq)]
pub struct ForbiddenUse {
    /// The forbidden name it stands for.
    pub call: String,
    /// The name as written (a `use … as` rename, or the name itself).
    pub written: String,
    /// "its region", or "`helper` (file chNN_x), which it uses".
    pub place: String,
}

/// An item of the exercise files that a region can name: a fn (or method), a
/// constant, a static, a type alias, a macro or a module, with its whole code.
struct Item {
    name: String,
    file: String,
    code: TokenStream,
}

/// Collects the named items of a file, at any depth (inside modules, impls and
/// function bodies), and every `use` rename (original, new name).
#[derive(Default)]
struct Items {
    file: String,
    items: Vec<Item>,
    renames: Vec<(String, String)>,
}

impl Items {
    fn add(&mut self, name: &syn::Ident, code: TokenStream) {
        self.items.push(Item {
            name: name.to_string(),
            file: self.file.clone(),
            code,
        });
    }
}

impl<'ast> Visit<'ast> for Items {
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        self.add(&i.sig.ident, i.to_token_stream());
        syn::visit::visit_item_fn(self, i);
    }
    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        self.add(&i.sig.ident, i.to_token_stream());
        syn::visit::visit_impl_item_fn(self, i);
    }
    fn visit_trait_item_fn(&mut self, i: &'ast syn::TraitItemFn) {
        self.add(&i.sig.ident, i.to_token_stream());
        syn::visit::visit_trait_item_fn(self, i);
    }
    fn visit_item_const(&mut self, i: &'ast syn::ItemConst) {
        self.add(&i.ident, i.to_token_stream());
        syn::visit::visit_item_const(self, i);
    }
    fn visit_item_static(&mut self, i: &'ast syn::ItemStatic) {
        self.add(&i.ident, i.to_token_stream());
        syn::visit::visit_item_static(self, i);
    }
    fn visit_item_type(&mut self, i: &'ast syn::ItemType) {
        self.add(&i.ident, i.to_token_stream());
        syn::visit::visit_item_type(self, i);
    }
    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        self.add(&i.ident, i.to_token_stream());
        syn::visit::visit_item_mod(self, i);
    }
    fn visit_item_macro(&mut self, i: &'ast syn::ItemMacro) {
        if let Some(name) = &i.ident {
            self.add(name, i.to_token_stream());
        }
        syn::visit::visit_item_macro(self, i);
    }
    fn visit_use_rename(&mut self, i: &'ast syn::UseRename) {
        self.renames
            .push((i.ident.to_string(), i.rename.to_string()));
    }
}

/// Every identifier in `code`, macro arguments included (strings and comments are
/// not identifiers).
fn idents(code: TokenStream, out: &mut BTreeSet<String>) {
    for tree in code {
        match tree {
            TokenTree::Ident(i) => {
                out.insert(i.to_string().trim_start_matches("r#").to_string());
            }
            TokenTree::Group(g) => idents(g.stream(), out),
            _ => {}
        }
    }
}

/// The code between the markers of region `id` in `text`, if it has them.
fn region_text<'a>(text: &'a str, id: &str) -> Option<&'a str> {
    let start = text.find(&format!("// ANCHOR: {id}\n"))?;
    let end = start + text[start..].find(&format!("// ANCHOR_END: {id}\n"))?;
    Some(&text[start..end])
}

/// The forbidden `names` that the code of region `id` reaches in `files` (module
/// name, text): in the region itself, or in an item of the exercise files that it
/// names, directly or through other items (matched by name: a helper of the same
/// name in another file counts too). A `use x as y` of a forbidden name anywhere
/// in the files makes `y` forbidden too, so renames, re-exports and module paths
/// (`m::y`) are caught; closures are code of the region or item that holds them.
pub fn forbidden_uses(
    files: &[(&str, &str)],
    id: &str,
    names: &[&str],
) -> Vec<ForbiddenUse> {
    let (mut items, mut renames) = (Vec::new(), Vec::new());
    let mut region = None;
    for (module, text) in files {
        let file = syn::parse_file(text)
            .unwrap_or_else(|e| panic!("{module}.rs does not parse: {e}"));
        let mut found = Items {
            file: module.to_string(),
            ..Items::default()
        };
        found.visit_file(&file);
        items.extend(found.items);
        renames.extend(found.renames);
        if let Some(code) = region_text(text, id) {
            let tokens: TokenStream = code
                .parse()
                .unwrap_or_else(|e| panic!("region {id} does not lex: {e}"));
            region = Some(tokens);
        }
    }
    let region = region.unwrap_or_else(|| panic!("test bug: no region {id}"));
    // A forbidden name's renames are forbidden too, under the name they stand for.
    let mut stands_for: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.to_string(), n.to_string()))
        .collect();
    loop {
        let more: Vec<(String, String)> = renames
            .iter()
            .filter_map(|(from, to)| {
                let call =
                    stands_for.iter().find(|(w, _)| w == from)?.1.clone();
                (!stands_for.iter().any(|(w, _)| w == to))
                    .then(|| (to.clone(), call))
            })
            .collect();
        if more.is_empty() {
            break;
        }
        stands_for.extend(more);
    }
    let mut found: Vec<ForbiddenUse> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut todo = vec![("its region".to_string(), region)];
    while let Some((place, code)) = todo.pop() {
        let mut used = BTreeSet::new();
        idents(code, &mut used);
        for name in &used {
            if let Some((written, call)) =
                stands_for.iter().find(|(w, _)| w == name)
            {
                let hit = ForbiddenUse {
                    call: call.clone(),
                    written: written.clone(),
                    place: place.clone(),
                };
                if !found.contains(&hit) {
                    found.push(hit);
                }
            }
            for (n, item) in items.iter().enumerate() {
                if item.name == *name && seen.insert(n) {
                    todo.push((
                        format!(
                            "`{}` ({}.rs), which it uses",
                            item.name, item.file
                        ),
                        item.code.clone(),
                    ));
                }
            }
        }
    }
    found
}

/// Runs the reader of `forbidden_uses` on examples of every way round it, once per
/// test process: a reader that misreads them would let a shortcut pass.
fn check_the_reader() {
    static CHECKED: Once = Once::new();
    CHECKED.call_once(|| {
        for (module, _) in EXERCISE_FILES {
            assert!(
                EXERCISE_LIB.contains(&format!("pub mod {module};")),
                "test bug: EXERCISE_FILES names {module}, which lib.rs does not declare"
            );
        }
        let declared = EXERCISE_LIB.lines().filter(|l| l.starts_with("pub mod ")).count();
        assert_eq!(
            declared,
            EXERCISE_FILES.len(),
            "test bug: lib.rs declares an exercise file that EXERCISE_FILES leaves out"
        );
        let file = |extra: &str, body: &str| {
            format!(
                "//! x\nuse tch::Tensor;\nuse course::masks::{{self, keep}};\n\
                 pub fn ex(ids: &Tensor) -> Tensor {{\n    // ANCHOR: ex99_x\n{body}\n    \
                 // ANCHOR_END: ex99_x\n}}\n\npub fn other() {{\n    // ANCHOR: ex99_y\n    \
                 masks::make_mask(1)\n    // ANCHOR_END: ex99_y\n}}\n{extra}\n"
            )
        };
        let other = "//! y\npub use course::masks::make_mask as hidden;\n\
                     pub fn far(x: i64) -> i64 { hidden(x) }\n\
                     pub mod helpers { pub fn deep(x: i64) -> i64 { x.make_mask() } }\n";
        let hits = |extra: &str, body: &str| {
            let text = file(extra, body);
            let files = [("ch99_x", text.as_str()), ("ch98_y", other)];
            !forbidden_uses(&files, "ex99_x", &["make_mask"]).is_empty()
        };
        let cases: [(&str, &str, bool); 20] = [
            ("", "    keep(ids) // make_mask(ids) is not called", false),
            ("", "    let s = \"masks::make_mask\"; keep(ids)", false),
            ("fn helper(i: &Tensor) -> Tensor { keep(i) }", "    helper(ids)", false),
            ("fn make_mask_mine(i: &Tensor) -> Tensor { keep(i) }", "    make_mask_mine(ids)", false),
            ("", "    masks::make_mask(ids)", true),
            ("", "    ids.make_mask()", true),
            ("use course::masks::make_mask as mm;", "    mm(ids)", true),
            ("use course::masks as m2;", "    m2::make_mask(ids)", true),
            ("use course::masks::*;", "    make_mask(ids)", true),
            ("use course::{masks::{make_mask as a, keep as b}};", "    a(ids)", true),
            ("fn helper(i: &Tensor) -> Tensor { masks::make_mask(i) }", "    helper(ids)", true),
            ("const F: fn(&Tensor) -> Tensor = masks::make_mask;", "    F(ids)", true),
            ("", "    crate::ch98_y::far(ids)", true),
            ("", "    crate::ch98_y::helpers::deep(ids)", true),
            ("mod m { pub use course::masks::make_mask as z; }", "    m::z(ids)", true),
            ("", "    let m = |i: &Tensor| i.make_mask();\n    m(ids)", true),
            ("fn run() -> impl Fn(i64) -> i64 { |x| hidden(x) }", "    run()(ids)", true),
            ("macro_rules! mm { ($x:expr) => { make_mask($x) }; }", "    mm!(ids)", true),
            ("", "    use course::masks as m3;\n    m3::make_mask(ids)", true),
            ("", "    vec![make_mask(ids)]", true),
        ];
        for (extra, body, want) in cases {
            assert_eq!(
                hits(extra, body),
                want,
                "test bug: the shortcut reader misreads `{extra}` with `{body}`"
            );
        }
    });
}
