//! Listings flush left, braces matched (xtask/src/listings.rs): the preprocessor's
//! rule on hand-made markdown, the checker on a fixture book that mdBook renders with
//! and without the preprocessor, and the checker on this repository's book as
//! `mdbook build book` renders it.
//!
//! The tests that run mdBook need it on PATH (`scripts/setup.sh --book`); without it
//! they say so and pass, except under CI=true, where they fail.
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use xtask::listings::{check_html, flush_left, listings, unmatched_brace};

fn repo_root() -> PathBuf {
    xtask::workspace_root()
}

#[test]
fn flush_left_removes_each_blocks_common_indentation_and_no_more() {
    let markdown = "\
Text stays    as it is.

```rust
    fn f() {
        1

    }
```

~~~~text
  ``` a fence inside a longer one is text
   b
~~~~

```rust
fn already_left() {}
    // indented inside
```

- item

  ```rust
        deep();
      shallow();
  ```
";
    let expected = "\
Text stays    as it is.

```rust
fn f() {
    1

}
```

~~~~text
``` a fence inside a longer one is text
 b
~~~~

```rust
fn already_left() {}
    // indented inside
```

- item

  ```rust
    deep();
  shallow();
  ```
";
    assert_eq!(flush_left(markdown), expected);
    // Already flush left: nothing changes.
    assert_eq!(flush_left(expected), expected);
}

#[test]
fn counted_attributes_are_not_shown() {
    // A lesson function in the middle of a listing carries `#[counted]` for the
    // exercises' counters; the reader sees only the function.
    let markdown = "```rust\n    /// Doc.\n    #[counted::counted(\"T::f\")]\n    pub fn f() {}\n\
                    #[counted::counted]\npub fn g() {}\n```\n#[counted::counted] in prose stays\n";
    let expected =
        "```rust\n    /// Doc.\n    pub fn f() {}\npub fn g() {}\n```\n\
                    #[counted::counted] in prose stays\n";
    assert_eq!(flush_left(markdown), expected);
}

#[test]
fn braces_in_strings_chars_and_comments_do_not_count() {
    assert_eq!(
        unmatched_brace("fn f() { g(\"{\", '}', '\\u{7b}') } // }"),
        None
    );
    assert_eq!(unmatched_brace("impl<'a> X<'a> { /* { */ }"), None);
    assert_eq!(unmatched_brace("let s = r#\"}\"#; { }"), None);
    let (line, message) = unmatched_brace("    x\n}\n").expect("a lone }");
    assert_eq!(line, 2);
    assert!(message.contains("closes nothing"), "{message}");
    let (line, message) =
        unmatched_brace("a\nimpl X {\n  fn f() {}\n").unwrap();
    assert_eq!(line, 2);
    assert!(message.contains("never closes"), "{message}");
}

#[test]
fn listings_are_read_from_html_as_the_reader_sees_them() {
    let html = "<p>x</p>\n<pre class=\"mermaid\">graph</pre>\n\
        <pre><code class=\"language-rust\"><span class=\"boring\">use a;\n</span>\
        fn f() -&gt; &amp;str { &quot;&lt;&quot; }\n\
        <span class=\"boring\">}</span></code></pre>\n\
        <pre><code>  plain\n</code></pre>";
    let found = listings(html);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].line, 3);
    assert_eq!(found[0].language, "rust");
    // Hidden lines are not what the reader sees: left out.
    assert_eq!(found[0].code, "fn f() -> &str { \"<\" }\n");
    assert_eq!(found[1].language, "");
    assert_eq!(found[1].code, "  plain\n");
}

/// `mdbook`, if installed; otherwise None, or a failure under CI.
fn mdbook() -> Option<&'static str> {
    let found = Command::new("mdbook")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").is_err(),
            "mdbook is not installed (scripts/setup.sh --book), and CI needs this test"
        );
        eprintln!("skipped: mdbook is not installed (scripts/setup.sh --book)");
        return None;
    }
    Some("mdbook")
}

fn build(mdbook: &str, book: &Path, dest: &Path) {
    let out = Command::new(mdbook)
        .arg("build")
        .arg(book)
        .arg("--dest-dir")
        .arg(dest)
        .output()
        .expect("run mdbook");
    assert!(
        out.status.success(),
        "mdbook build {} failed:\n{}",
        book.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap().flatten() {
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &dest);
        } else {
            fs::copy(&path, &dest).unwrap();
        }
    }
}

/// A fresh scratch folder under the build directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_check_fails_on_an_indented_listing_and_a_lone_brace_and_the_preprocessor_fixes_the_first(
) {
    let Some(mdbook) = mdbook() else { return };
    let work = scratch("listings_fixture");
    copy_dir(
        &repo_root().join("xtask/tests/fixtures/listings_book"),
        &work,
    );
    let book = work.join("book");

    // mdBook alone: the method cut from its impl is indented, the lone `}` unmatched.
    build(mdbook, &book, &work.join("plain"));
    let shown: Vec<String> = check_html(&work.join("plain"))
        .iter()
        .map(ToString::to_string)
        .collect();
    let count =
        |words: &str| shown.iter().filter(|p| p.contains(words)).count();
    assert_eq!(
        (
            count("indented by at least 4"),
            count("indented by at least 2"),
            count("closes nothing"),
            shown.len()
        ),
        (2, 1, 1, 4),
        "expected the method and the list item's block indented by 4, the output \
         by 2, and the lone brace: {shown:#?}"
    );

    // With the preprocessor, as book/book.toml runs it (here the binary cargo built).
    let toml = fs::read_to_string(book.join("book.toml")).unwrap();
    fs::write(
        book.join("book.toml"),
        format!(
            "{toml}\n[preprocessor.flush-left]\ncommand = \"{} mdbook-flush-left\"\n\
             after = [\"links\"]\nrenderers = [\"html\"]\n",
            env!("CARGO_BIN_EXE_xtask")
        ),
    )
    .unwrap();
    build(mdbook, &book, &work.join("flushed"));
    let shown: Vec<String> = check_html(&work.join("flushed"))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(shown.len(), 1, "only the lone brace is left: {shown:#?}");
    assert!(shown[0].contains("closes nothing"), "{shown:#?}");
    // The list item's block is still inside its item: moved left to the fence, no more.
    let page = fs::read_to_string(work.join("flushed/listings.html")).unwrap();
    let item = listings(&page)
        .into_iter()
        .find(|l| l.code.contains("shallow") || l.code.contains("let x"))
        .expect("the list item's listing");
    assert_eq!(
        item.code,
        "let x = 1;\nif x > 0 {\n    println!(\"{x}\");\n}\n"
    );
}

/// The course's book as a reader gets it from `mdbook build book`, with the
/// preprocessor command in book/book.toml exactly as written there.
#[test]
fn every_listing_of_the_book_is_flush_left_with_its_braces_matched() {
    let Some(mdbook) = mdbook() else { return };
    let dest = scratch("book_html");
    build(mdbook, &repo_root().join("book"), &dest);
    let problems = check_html(&dest);
    assert!(
        problems.is_empty(),
        "{} listing problem(s) in the rendered book:\n{}",
        problems.len(),
        xtask::book::report(&problems)
    );
    // The check looked at real listings: the book has hundreds.
    let pages: usize = fs::read_dir(&dest)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "html"))
        .filter(|e| e.file_name() != "print.html")
        .map(|e| listings(&fs::read_to_string(e.path()).unwrap()).len())
        .sum();
    assert!(pages > 200, "only {pages} listings found in the built book");
}
