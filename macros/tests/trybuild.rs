//! `#[mem_guard]` compiles and keeps behaviour (pass), and rejects bad input with spanned
//! errors (fail, with reviewed `.stderr` files).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
