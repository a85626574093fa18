//! Property tests: printing round-trips, and no input panics the parser.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use trace_format::{
    AddrBase, AddrExpr, AddrRole, CceOp, CmeOp, Compare, DescAddr, DescFields, DescFlag, DescFlags,
    Dtype, ExpectCheck, FileRef, FillContent, FillPattern, Float, Index, MAX_DESC_LEN,
    MAX_DOORBELL, MAX_ERRORS, MAX_LEN, Offset, PathComponent, QueueRef, RING_SLOTS, RunMode, Sign,
    Span, Statement, StatementKind, Trace, parse, parse_addr,
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

fn queue_ref(slot: bool) -> impl Strategy<Value = QueueRef> {
    let slot = if slot {
        proptest::option::of(0..RING_SLOTS).boxed()
    } else {
        Just(None).boxed()
    };
    (prop::collection::vec(component(), 0..3), ident(), slot).prop_map(|(mut path, last, slot)| {
        path.push(PathComponent {
            name: last,
            index: None,
            span: Span::default(),
        });
        QueueRef {
            path,
            slot,
            span: Span::default(),
        }
    })
}

fn flags(allowed: fn(DescFlag) -> bool) -> impl Strategy<Value = DescFlags> {
    prop::collection::vec(prop::sample::select(DescFlag::ALL), 0..6)
        .prop_map(move |v| v.into_iter().filter(|f| allowed(*f)).collect())
}

/// Valid `desc` fields: `raw=`, or `len=` + an address and a consistent
/// choice of word 1 (the CME command, `word1=` or `buf2=`).
fn desc_fields() -> impl Strategy<Value = DescFields> {
    let raw = any::<[u8; 16]>().prop_map(|raw| DescFields {
        raw: Some(raw),
        ..DescFields::default()
    });
    let role = prop::sample::select(&[AddrRole::Src, AddrRole::Dst, AddrRole::Any][..]);
    let base = (
        1..=MAX_DESC_LEN,
        role,
        addr_expr(),
        proptest::option::of(0u8..4),
        flags(|f| !f.in_word1()),
    );
    let cme = (
        proptest::option::of(prop::sample::select(CmeOp::ALL)),
        proptest::option::of(prop::sample::select(CceOp::ALL)),
        proptest::option::of(prop::sample::select(Dtype::ALL)),
        proptest::option::of(prop::sample::select(Dtype::ALL)),
        proptest::option::of(
            any::<f64>().prop_filter("FP32 range", |v| v.abs() <= f64::from(f32::MAX)),
        ),
        proptest::option::of(0u8..8),
        flags(DescFlag::in_word1),
    );
    // word 1: 0 = CME fields, 1 = word1=, 2 = buf2=
    let word1 = (0u8..3, any::<u32>(), addr_expr());
    let structured = (base, cme, word1).prop_map(
        |(
            (len, role, addr, ring_id, flags0),
            (op, cce, in_dtype, out_dtype, scale, crc_iv, flags1),
            (mode, word1, buf2),
        )| {
            let mut f = DescFields {
                len: Some(len),
                addr: Some(DescAddr { role, addr }),
                ring_id,
                flags: flags0,
                ..DescFields::default()
            };
            match mode {
                0 => {
                    f.cce = cce;
                    f.op = if cce.is_some() && op != Some(CmeOp::Copy) {
                        None
                    } else {
                        op
                    };
                    if cce.is_some() {
                        f.in_dtype = in_dtype;
                        f.out_dtype = out_dtype;
                    }
                    if cce == Some(CceOp::Fma) {
                        f.scale = scale.map(Float);
                    }
                    f.crc_iv = crc_iv;
                    for flag in flags1.iter() {
                        f.flags.set(flag, true);
                    }
                }
                1 => f.word1 = Some(word1),
                _ => f.buf2 = Some(buf2),
            }
            f
        },
    );
    prop_oneof![1 => raw, 4 => structured]
}

fn statement() -> impl Strategy<Value = StatementKind> {
    prop_oneof![4 => statement_v1(), 3 => statement_v2()]
}

fn statement_v2() -> impl Strategy<Value = StatementKind> {
    let compare = prop::sample::select(&[Compare::Eq, Compare::Ne, Compare::Ge][..]);
    prop_oneof![
        (queue_ref(true), desc_fields())
            .prop_map(|(queue, fields)| StatementKind::Desc { queue, fields }),
        (queue_ref(false), 1..=MAX_DOORBELL)
            .prop_map(|(queue, count)| StatementKind::Doorbell { queue, count }),
        (
            queue_ref(false),
            proptest::option::of(prop::sample::select(
                &[
                    "PKT_LEN",
                    "SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE",
                    "sec_a_int_cause.first"
                ][..]
            )),
            proptest::option::of(1..=u64::from(u32::MAX)),
        )
            .prop_map(|(queue, cause, count)| StatementKind::ExpectFault {
                queue,
                cause: cause.map(str::to_string),
                cause_span: Span::default(),
                count,
            }),
        (0..=7u8, proptest::option::of(1..=u64::from(u32::MAX)))
            .prop_map(|(core, count)| StatementKind::ExpectRefusal { core, count }),
        prop_oneof![
            Just(RunMode::Idle),
            (1..=u64::MAX).prop_map(RunMode::Cycles),
            any::<u64>().prop_map(RunMode::Until),
        ]
        .prop_map(|mode| StatementKind::Run { mode }),
        (
            addr_expr(),
            compare,
            any::<u32>(),
            any::<Option<u32>>(),
            proptest::option::of(1..=u64::MAX)
        )
            .prop_map(|(addr, compare, value, mask, timeout)| {
                // keep the comparison meaningful under the mask, as the parser requires:
                // ==/!= without bits outside it, >= in 1..=mask
                let m = mask.unwrap_or(u32::MAX);
                let value = match compare {
                    Compare::Eq | Compare::Ne => value & m,
                    Compare::Ge if m == 0 => 1, // filtered out below
                    Compare::Ge => 1 + value % m,
                };
                StatementKind::Wait {
                    addr,
                    compare,
                    value,
                    mask,
                    timeout,
                }
            })
            .prop_filter("'>=' needs a mask above 0", |k| !matches!(
                k,
                StatementKind::Wait {
                    compare: Compare::Ge,
                    mask: Some(0),
                    ..
                }
            )),
    ]
}

fn statement_v1() -> impl Strategy<Value = StatementKind> {
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
    '9', 'a', 'f', 'g', 'z', 'é', '\u{0}', '\u{feff}', '!', '>', 'e',
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

proptest! {
    /// The word-at-a-time fill gives exactly the bytes of `byte_at`, from
    /// any start and for any length (partial words at both ends, the
    /// 64-byte blocks between).
    #[test]
    fn pattern_fill_is_byte_at(
        incr32 in any::<bool>(),
        seed in any::<u64>(),
        start in any::<u64>(),
        len in 0usize..300,
    ) {
        let kind = if incr32 { FillPattern::Incr32 } else { FillPattern::Incr8 };
        let mut buf = vec![0u8; len];
        kind.fill(seed, start, &mut buf);
        let want: Vec<u8> = (0..len as u64).map(|i| kind.byte_at(seed, start.wrapping_add(i))).collect();
        prop_assert_eq!(buf, want);
    }
}
