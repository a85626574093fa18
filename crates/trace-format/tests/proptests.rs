//! Property tests: printing round-trips, and no input panics the parser.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use trace_format::{
    AddrBase, AddrExpr, ExpectCheck, FileRef, FillContent, FillPattern, Index, MAX_ERRORS, MAX_LEN,
    Offset, PathComponent, Sign, Span, Statement, StatementKind, Trace, parse, parse_addr,
};

fn ident() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_]{0,8}"
}

fn component() -> impl Strategy<Value = PathComponent> {
    let index = prop_oneof![
        Just(None),
        any::<u64>().prop_map(|i| Some(Index::Plain(i))),
        (0u64..200).prop_map(|i| Some(Index::Partition(i))),
        any::<u64>().prop_map(|i| Some(Index::Partition(i))),
    ];
    (ident(), index).prop_map(|(name, index)| PathComponent {
        name,
        index,
        span: Span::default(),
    })
}

fn addr_expr() -> impl Strategy<Value = AddrExpr> {
    let base = prop_oneof![
        any::<u64>().prop_map(AddrBase::Literal),
        prop::collection::vec(component(), 1..5).prop_map(AddrBase::Path),
    ];
    let offset = (any::<bool>(), any::<u64>()).prop_map(|(minus, value)| Offset {
        sign: if minus { Sign::Minus } else { Sign::Plus },
        value,
        span: Span::default(),
    });
    (base, prop::collection::vec(offset, 0..4)).prop_map(|(base, offsets)| AddrExpr {
        base,
        offsets,
        span: Span::default(),
    })
}

fn file_ref() -> impl Strategy<Value = FileRef> {
    prop_oneof![
        "[a-z0-9_./-]{1,20}",
        // anything but a newline, including quotes, backslashes, '#', '='
        "[^\n]{1,20}",
    ]
    .prop_map(|path| FileRef {
        path,
        span: Span::default(),
    })
}

fn len() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..=4096, 1u64..=MAX_LEN]
}

fn statement() -> impl Strategy<Value = StatementKind> {
    let fill = (
        addr_expr(),
        any::<bool>(),
        any::<u8>(),
        any::<u32>(),
        1u64..1 << 30,
    )
        .prop_map(|(addr, incr32, b, seed, n)| {
            let (len, content) = match (incr32, b % 3) {
                (_, 0) => (n, FillContent::Byte(b)),
                (false, _) => (
                    n,
                    FillContent::Pattern {
                        kind: FillPattern::Incr8,
                        seed: u64::from(seed & 0xff),
                    },
                ),
                (true, _) => (
                    n * 4,
                    FillContent::Pattern {
                        kind: FillPattern::Incr32,
                        seed: u64::from(seed),
                    },
                ),
            };
            StatementKind::Fill { addr, len, content }
        });
    prop_oneof![
        (addr_expr(), any::<u32>())
            .prop_map(|(addr, value)| StatementKind::Write32 { addr, value }),
        (addr_expr(), any::<Option<u32>>(), any::<Option<u32>>()).prop_map(
            |(addr, expect, mask)| StatementKind::Read32 {
                addr,
                // keep the expectation inside the mask, as the parser requires
                expect: expect.map(|e| e & mask.unwrap_or(u32::MAX)),
                mask,
            }
        ),
        fill,
        (addr_expr(), prop::collection::vec(any::<u8>(), 1..40))
            .prop_map(|(addr, bytes)| StatementKind::Write { addr, bytes }),
        (
            addr_expr(),
            file_ref(),
            any::<Option<u64>>(),
            proptest::option::of(len())
        )
            .prop_map(|(addr, path, offset, len)| StatementKind::Load {
                addr,
                path,
                offset,
                len
            }),
        (addr_expr(), prop::collection::vec(any::<u8>(), 1..40)).prop_map(|(addr, b)| {
            StatementKind::Expect {
                addr,
                check: ExpectCheck::Bytes(b),
            }
        }),
        (addr_expr(), len(), any::<[u8; 32]>()).prop_map(|(addr, len, digest)| {
            StatementKind::Expect {
                addr,
                check: ExpectCheck::Sha256 { len, digest },
            }
        }),
        (addr_expr(), len(), proptest::option::of(file_ref()))
            .prop_map(|(addr, len, file)| StatementKind::Dump { addr, len, file }),
    ]
}

/// Parses, and checks the invariants every result must satisfy.
fn parse_checked(src: &str) -> Option<Trace> {
    let lines = u32::try_from(src.split('\n').count()).unwrap();
    match parse(src, "fuzz.trace") {
        Ok(mut t) => {
            // canonical printing is a fixed point
            let printed = t.to_string();
            let mut again = parse(&printed, "printed")
                .unwrap_or_else(|e| panic!("reparse of {printed:?} failed: {e:?}"));
            t.clear_spans();
            again.clear_spans();
            assert_eq!(t, again, "printed: {printed:?}");
            Some(t)
        }
        Err(errors) => {
            assert!(!errors.is_empty());
            assert!(errors.len() <= MAX_ERRORS + 1);
            for e in &errors {
                assert!(e.line >= 1 && e.line <= lines, "{e}");
                assert!(e.column >= 1, "{e}");
                assert!(!e.message.is_empty());
                assert!(e.to_string().starts_with("fuzz.trace:"));
            }
            None
        }
    }
}

const EXAMPLE: &str = include_str!("data/example.trace");

/// Characters that matter to the lexer and the address parser.
const ALPHABET: &[char] = &[
    ' ', '\t', '\n', '\r', '#', '=', '"', '\\', '[', ']', '.', '+', '-', '_', 'p', 'x', '0', '1',
    '9', 'a', 'f', 'g', 'z', 'é', '\u{0}', '\u{feff}',
];

#[derive(Clone, Debug)]
enum Mutation {
    Insert(usize, char),
    Delete(usize, usize),
    Replace(usize, char),
    DupLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let ch = prop::sample::select(ALPHABET);
    prop_oneof![
        (any::<usize>(), ch.clone()).prop_map(|(i, c)| Mutation::Insert(i, c)),
        (any::<usize>(), 1usize..8).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<usize>(), ch).prop_map(|(i, c)| Mutation::Replace(i, c)),
        any::<usize>().prop_map(Mutation::DupLine),
    ]
}

fn apply(src: &str, muts: &[Mutation]) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    for m in muts {
        let n = chars.len().max(1);
        match *m {
            Mutation::Insert(i, c) => chars.insert(i % (chars.len() + 1), c),
            Mutation::Delete(i, k) => {
                let start = i % n;
                let end = (start + k).min(chars.len());
                if start < end {
                    chars.drain(start..end);
                }
            }
            Mutation::Replace(i, c) => {
                if !chars.is_empty() {
                    chars[i % n] = c;
                }
            }
            Mutation::DupLine(i) => {
                let text: String = chars.iter().collect();
                let mut lines: Vec<&str> = text.split('\n').collect();
                let j = i % lines.len();
                lines.insert(j, lines[j]);
                chars = lines.join("\n").chars().collect();
            }
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn addr_round_trip(expr in addr_expr()) {
        let text = expr.to_string();
        let mut parsed = parse_addr(&text, "p").unwrap();
        prop_assert_eq!(parsed.span, Span::new(1, 1, u32::try_from(text.chars().count()).unwrap()));
        parsed.clear_spans();
        prop_assert_eq!(parsed, expr);
    }

    #[test]
    fn statement_round_trip(kinds in prop::collection::vec(statement(), 1..6)) {
        let trace = Trace {
            statements: kinds
                .into_iter()
                .map(|kind| Statement { kind, span: Span::default() })
                .collect(),
        };
        let text = trace.to_string();
        let mut parsed = parse(&text, "p").unwrap_or_else(|e| panic!("{text:?}: {e:?}"));
        for (i, s) in parsed.statements.iter().enumerate() {
            prop_assert_eq!(s.span.line, u32::try_from(i + 1).unwrap());
        }
        parsed.clear_spans();
        prop_assert_eq!(parsed, trace);
    }

    #[test]
    fn random_strings_never_panic(src in any::<String>()) {
        parse_checked(&src);
        let _ = parse_addr(&src, "a");
    }

    #[test]
    fn random_lexer_soup_never_panics(chars in prop::collection::vec(prop::sample::select(ALPHABET), 0..200)) {
        let src: String = chars.into_iter().collect();
        parse_checked(&src);
        let _ = parse_addr(&src, "a");
    }

    #[test]
    fn mutated_traces_never_panic(muts in prop::collection::vec(mutation(), 1..6)) {
        let src = apply(EXAMPLE, &muts);
        parse_checked(&src);
    }

    #[test]
    fn mutated_lines_never_panic(line in prop::sample::select(EXAMPLE.lines().collect::<Vec<_>>()),
                                 muts in prop::collection::vec(mutation(), 1..4)) {
        let src = apply(line, &muts);
        parse_checked(&src);
        let _ = parse_addr(&src, "a");
    }
}

#[test]
fn example_parses() {
    assert!(parse_checked(EXAMPLE).is_some());
}
