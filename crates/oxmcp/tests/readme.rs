//! The README's "Write a server" is the example program, so the README cannot drift from
//! code that compiles.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_readme_shows_the_example_program() {
    let readme = include_str!("../../../README.md");
    let example = include_str!("../examples/write_a_server.rs");
    // The example's own `//!` header is not part of the program shown.
    let program: String = example
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(program.contains("fn main()"));
    let block = format!("```rust\n{program}```");
    assert!(
        readme.contains(&block),
        "README.md's Write a server block differs from examples/write_a_server.rs"
    );
}
