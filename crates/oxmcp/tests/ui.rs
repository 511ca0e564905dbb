//! Compile-time behaviour of the attribute macros: what compiles, and errors that point at
//! the user's code (`TRYBUILD=overwrite` regenerates the `.stderr` files, to be reviewed).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass.rs");
    t.compile_fail("tests/ui/not_async.rs");
    t.compile_fail("tests/ui/mut_self.rs");
    t.compile_fail("tests/ui/self_by_value.rs");
    t.compile_fail("tests/ui/duplicate_tool.rs");
    t.compile_fail("tests/ui/not_deserialize.rs");
    t.compile_fail("tests/ui/missing_doc.rs");
    t.compile_fail("tests/ui/bad_pattern.rs");
    t.compile_fail("tests/ui/unknown_argument.rs");
    t.compile_fail("tests/ui/completion_forms.rs");
    t.compile_fail("tests/ui/method_without_server.rs");
}
