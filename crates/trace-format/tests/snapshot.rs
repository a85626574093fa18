//! Snapshots of a parsed example trace and of the errors in a broken one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use trace_format::parse;

#[test]
fn example_trace_ast() {
    let src = include_str!("data/example.trace");
    let trace = parse(src, "example.trace").unwrap_or_else(|e| {
        let msgs: Vec<String> = e.iter().map(ToString::to_string).collect();
        panic!("{}", msgs.join("\n"))
    });
    insta::assert_yaml_snapshot!(trace);
}

#[test]
fn example_trace_canonical_text() {
    let trace = parse(include_str!("data/example.trace"), "example.trace").unwrap();
    insta::assert_snapshot!(trace.to_string());
}

#[test]
fn error_trace_messages() {
    let errors = parse(include_str!("data/errors.trace"), "errors.trace").unwrap_err();
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    insta::assert_snapshot!(text.join("\n"));
}
