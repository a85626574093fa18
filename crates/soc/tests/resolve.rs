//! `soc::resolve`: every syntax form of `docs/trace-format.md` §2 against the
//! Trn2 map, and the errors (message and the component the span points at).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{addr, device, try_resolve};
use trace_format::Span;

const TPB0: u64 = 0x20_0000_0000;
const TPB3: u64 = 0x70_0000_0000;
const TPB7: u64 = TPB3 | (1 << 47);
const TPB_LOCAL: u64 = 0x8_0000_0000;
const EVT_SEM: u64 = TPB_LOCAL + 0x270_0000;
const ENG0: u64 = 0x10_0200_0000;

/// The resolved register name.
fn register(text: &str) -> Option<String> {
    try_resolve(&device(), text).unwrap().register
}

/// The error of an expression that must not resolve: (message, span).
fn error(text: &str) -> (String, Span) {
    match try_resolve(&device(), text) {
        Ok(r) => panic!("`{text}` resolved to {:#x}, expected an error", r.addr),
        Err(e) => (e.message, e.span),
    }
}

/// The text a span covers in a one-line expression.
fn covered(text: &str, span: Span) -> String {
    assert_eq!(span.line, 1);
    text.chars()
        .skip(span.column as usize - 1)
        .take(span.len as usize)
        .collect()
}

#[test]
fn hbm_with_offsets() {
    let d = device();
    assert_eq!(addr(&d, "hbm0"), 0);
    assert_eq!(addr(&d, "hbm0+0x1000"), 0x1000);
    assert_eq!(addr(&d, "hbm1+0x1000-0x10"), 0x40_0000_0000 + 0xff0);
    assert_eq!(addr(&d, "hbm3"), 0x8040_0000_0000);
    assert_eq!(register("hbm0+0x1000"), None);
}

#[test]
fn sbuf_partition_has_256_kib_stride() {
    let d = device();
    assert_eq!(addr(&d, "tpb0.sbuf"), TPB0);
    assert_eq!(addr(&d, "tpb0.sbuf[p0]"), TPB0);
    assert_eq!(addr(&d, "tpb0.sbuf[p1]"), TPB0 + 0x4_0000);
    assert_eq!(
        addr(&d, "tpb0.sbuf[p5]+0x100"),
        TPB0 + 5 * 256 * 1024 + 0x100
    );
    // 'P' is accepted as well as 'p'.
    assert_eq!(addr(&d, "tpb0.sbuf[P5]+0x100"), TPB0 + 0x14_0100);
    assert_eq!(register("tpb0.sbuf[p5]+0x100"), None);
}

#[test]
fn psum_last_partition() {
    let d = device();
    assert_eq!(
        addr(&d, "tpb3.psum[p127]"),
        TPB3 + TPB_LOCAL + 0x200_0000 + 127 * 32 * 1024
    );
    assert_eq!(addr(&d, "tpb3.psum[p127]"), 0x78_023f_8000);
}

#[test]
fn queue_register_is_case_insensitive() {
    let d = device();
    let want = ENG0 + 12 * 0x10_0000 + 0x2_0000 + 0x1000 + 3 * 0x1000 + 0x38;
    for text in [
        "eng12.s2m.q3.rdrtp_inc",
        "eng12.s2m.q3.RDRTP_INC",
        "eng12.s2m.q3.RdRtP_iNc",
    ] {
        let r = try_resolve(&d, text).unwrap();
        assert_eq!(r.addr, want, "{text}");
        assert_eq!(r.register.as_deref(), Some("RDRTP_INC"), "{text}");
    }
    let r = try_resolve(&d, "eng0.m2s.q0.q_cfg").unwrap();
    assert_eq!(
        (r.addr, r.register.as_deref()),
        (ENG0 + 0x1020, Some("Q_CFG"))
    );
}

#[test]
fn engine_level_registers_of_a_container_block() {
    let d = device();
    let r = try_resolve(&d, "eng0.m2s.change_state").unwrap();
    assert_eq!(r.addr, ENG0 + 0x204);
    assert_eq!(r.register.as_deref(), Some("CHANGE_STATE"));
    let r = try_resolve(&d, "eng3.gen.axi_queue_error_status[15]").unwrap();
    assert_eq!(r.addr, ENG0 + 3 * 0x10_0000 + 0x3_8000 + 0x2c04 + 15 * 0xc);
    assert_eq!(r.register.as_deref(), Some("AXI_QUEUE_ERROR_STATUS[15]"));
}

#[test]
fn semaphore_symbols_of_the_map() {
    let d = device();
    let windows = [
        ("read", 0x1000),
        ("set", 0x1400),
        ("inc", 0x1800),
        ("dec", 0x1c00),
    ];
    for (name, base) in windows {
        let text = format!("tpb0.sem.{name}[3]");
        let r = try_resolve(&d, &text).unwrap();
        assert_eq!(r.addr, TPB0 + EVT_SEM + base + 3 * 4, "{text}");
    }
    let r = try_resolve(&d, "tpb0.sem.inc[3]").unwrap();
    assert_eq!(r.register.as_deref(), Some("SEM_INC[3]"));
    // Symbols are case-insensitive like register names.
    assert_eq!(addr(&d, "tpb0.SEM.Inc[3]"), TPB0 + EVT_SEM + 0x180c);
    // `event` is a one-name symbol.
    assert_eq!(addr(&d, "tpb2.event[7]"), 0x60_0000_0000 + EVT_SEM + 7 * 4);
    // Offsets apply after the symbol.
    assert_eq!(addr(&d, "tpb0.sem.inc[3]+4"), TPB0 + EVT_SEM + 0x1810);
}

#[test]
fn evt_sem_register_by_its_own_name() {
    let d = device();
    let r = try_resolve(&d, "tpb7.evt_sem.sem_read[255]").unwrap();
    assert_eq!(r.addr, TPB7 + EVT_SEM + 0x1000 + 255 * 4);
    assert_eq!(r.addr, 0x8078_0270_13fc);
    assert_eq!(r.register.as_deref(), Some("SEM_READ[255]"));
}

#[test]
fn local_register_alias_resolves_to_the_named_register() {
    let d = device();
    let base = TPB0 + TPB_LOCAL + 0x306_0000;
    let r = try_resolve(&d, "tpb0.q7_local_reg.lr[39]").unwrap();
    assert_eq!(r.addr, base + 0x14e0);
    assert_eq!(r.register.as_deref(), Some("MEMCOPY_CARVEOUT_CFG"));
    let r = try_resolve(&d, "tpb0.q7_local_reg.lr[40]").unwrap();
    assert_eq!(r.addr, base + 0x1500);
    assert_eq!(r.register.as_deref(), Some("MEMCOPY_DMA_CFG"));
    // Both spellings are the same address.
    assert_eq!(
        addr(&d, "tpb0.q7_local_reg.memcopy_carveout_cfg"),
        base + 0x14e0
    );
    // Neighbours stay array elements.
    let r = try_resolve(&d, "tpb0.q7_local_reg.lr[38]").unwrap();
    assert_eq!(r.addr, base + 0x1000 + 38 * 0x20);
    assert_eq!(r.register.as_deref(), Some("LR[38]"));
    let r = try_resolve(&d, "tpb0.q7_local_reg.lr[41]").unwrap();
    assert_eq!(r.register.as_deref(), Some("LR[41]"));
}

#[test]
fn literals_and_literal_offsets() {
    let d = device();
    let r = try_resolve(&d, "0x2000000000").unwrap();
    assert_eq!((r.addr, r.register), (TPB0, None));
    assert_eq!(addr(&d, "0x1000+0x10-0x8"), 0x1008);
    assert_eq!(addr(&d, "4_096"), 4096);
    // A literal resolves even where nothing is mapped: faults come later.
    assert_eq!(addr(&d, "0x38000000"), 0x3800_0000);
    assert_eq!(addr(&d, "0xffff_ffff_ffff_ffff"), u64::MAX);
    // A literal that happens to be a register is still just an address.
    assert_eq!(register("0x1002001038"), None);
}

#[test]
fn offsets_that_leave_the_address_space_are_errors() {
    for text in [
        "hbm0-1",
        "hbm0+0x10-0x20",
        "0xffff_ffff_ffff_ffff+1",
        "0-0x1",
        "host+0xffff_ffff_ffff_ffff",
    ] {
        let (msg, span) = error(text);
        assert!(
            msg.contains("outside the 64-bit address space"),
            "{text}: {msg}"
        );
        assert_eq!(
            covered(text, span),
            text,
            "{text}: span is the whole expression"
        );
    }
    // Staying inside is fine even at the very top.
    let d = device();
    assert_eq!(addr(&d, "0xffff_ffff_ffff_fff0+0xf"), u64::MAX);
}

#[test]
fn unknown_top_level_name() {
    // (`hbm9` is an instance that does not exist: errors_point_at_the_mistake.)
    let text = "hmb0+0x10";
    let (msg, span) = error(text);
    assert_eq!(covered(text, span), "hmb0");
    assert!(msg.contains("unknown name `hmb0`"), "{msg}");
    // The list of top-level regions names each kind once.
    let list = msg
        .split("top-level regions: ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap();
    let stems: Vec<&str> = list.split(", ").collect();
    let mut unique = stems.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(stems.len(), unique.len(), "duplicates in `{list}`");
    for stem in ["hbm", "eng", "tpb", "host"] {
        assert!(stems.contains(&stem), "{stem} missing from `{list}`");
    }
}

#[test]
fn unknown_names_point_at_the_bad_component() {
    let cases = [
        // (expression, component pointed at, message fragment)
        ("bogus.x", "bogus", "unknown name `bogus`"),
        (
            "eng0.m2s.q99.q_cfg",
            "q99",
            "unknown name `q99` under `eng0.m2s`",
        ),
        (
            "eng0.m2s.q0.bogus",
            "bogus",
            "not a register of block udma_m2s_q",
        ),
        (
            "eng0.m2s.bogus",
            "bogus",
            "not a register of block udma_m2s",
        ),
        (
            "eng0.bogus.q0.q_cfg",
            "bogus",
            "unknown name `bogus` under `eng0`",
        ),
        ("tpb0.sbuf.foo", "foo", "`tpb0.sbuf` has no registers"),
        ("hbm0.foo", "foo", "`hbm0` has no registers"),
        ("tpb0.sem.inc[3].x", "x", "unexpected `x`"),
        (
            "tpb0.evt_sem.sem_nope[1]",
            "sem_nope[1]",
            "unknown name `sem_nope`",
        ),
    ];
    for (text, at, fragment) in cases {
        let (msg, span) = error(text);
        assert_eq!(covered(text, span), at, "{text}: {msg}");
        assert!(msg.contains(fragment), "{text}: `{msg}` lacks `{fragment}`");
    }
}

#[test]
fn partition_index_on_a_region_without_partitions() {
    for (text, at, region) in [
        ("hbm0[p1]", "hbm0[p1]", "hbm0"),
        ("tpb0.scratch[p1]", "scratch[p1]", "tpb0.scratch"),
        ("eng0.m2s.q0[p0]", "q0[p0]", "eng0.m2s.q0"),
    ] {
        let (msg, span) = error(text);
        assert_eq!(covered(text, span), at, "{text}");
        assert!(
            msg.contains(&format!("`{region}` has no partitions")),
            "{msg}"
        );
    }
}

#[test]
fn partition_out_of_range() {
    let text = "tpb0.sbuf[p128]";
    let (msg, span) = error(text);
    assert_eq!(covered(text, span), "sbuf[p128]");
    assert!(msg.contains("partition 128 is out of range"), "{msg}");
    let (msg, _) = error("tpb1.psum[p128]+4");
    assert!(
        msg.contains("partition 128 is out of range for tpb1.psum"),
        "{msg}"
    );
    assert_eq!(addr(&device(), "tpb0.sbuf[p127]"), TPB0 + 127 * 0x4_0000);
}

#[test]
fn nothing_follows_a_partition() {
    let text = "tpb0.sbuf[p1].x";
    let (msg, span) = error(text);
    assert_eq!(covered(text, span), "x");
    assert!(msg.contains("nothing can follow"), "{msg}");
}

#[test]
fn register_array_needs_an_index() {
    let text = "tpb0.sem.inc";
    let (msg, span) = error(text);
    assert_eq!(covered(text, span), "inc");
    assert!(msg.contains("is an array"), "{msg}");
    let (msg, _) = error("tpb0.evt_sem.sem_read");
    assert!(
        msg.contains("SEM_READ") && msg.contains("is an array"),
        "{msg}"
    );
}

#[test]
fn register_index_out_of_range() {
    for text in [
        "tpb0.sem.inc[256]",
        "tpb7.evt_sem.sem_read[256]",
        "eng0.gen.axi_queue_cfg[16]",
        "tpb0.q7_local_reg.lr[60]",
        "tpb0.sem.inc[0x1_0000_0000]",
    ] {
        let (msg, span) = error(text);
        assert!(msg.contains("out of range"), "{text}: {msg}");
        let last = text.rsplit('.').next().unwrap();
        assert_eq!(covered(text, span), last, "{text}");
    }
}

#[test]
fn partition_index_on_a_register() {
    let text = "tpb0.sem.inc[p3]";
    let (msg, span) = error(text);
    assert_eq!(covered(text, span), "inc[p3]");
    assert!(msg.contains("plain index"), "{msg}");
    let (msg, _) = error("eng0.m2s.q0.q_cfg[p0]");
    assert!(msg.contains("plain index"), "{msg}");
}

#[test]
fn index_on_a_plain_register() {
    let text = "eng0.m2s.q0.q_cfg[0]";
    let (msg, span) = error(text);
    assert_eq!(covered(text, span), "q_cfg[0]");
    assert!(msg.contains("not an array"), "{msg}");
}

#[test]
fn plain_index_on_a_region_is_an_error() {
    // At the end of the path …
    for (text, at) in [
        ("tpb0.sbuf[3]", "sbuf[3]"),
        ("hbm0[1]", "hbm0[1]"),
        ("eng0.m2s.q0[1]", "q0[1]"),
    ] {
        let (msg, span) = error(text);
        assert_eq!(covered(text, span), at, "{text}");
        assert!(msg.contains("takes no index"), "{text}: {msg}");
    }
    // … and in the middle, where it must not be silently dropped.
    for (text, at) in [
        ("eng0.m2s.q0[5].q_cfg", "q0[5]"),
        ("eng0[3].m2s.q0.q_cfg", "eng0[3]"),
        ("tpb0[1].sem.inc[3]", "tpb0[1]"),
    ] {
        let (msg, span) = error(text);
        assert_eq!(covered(text, span), at, "{text}: {msg}");
        assert!(msg.contains("takes no index"), "{text}: {msg}");
    }
}

#[test]
fn index_inside_a_symbol_is_an_error() {
    let text = "tpb0.sem[2].inc[3]";
    let (msg, span) = error(text);
    assert_eq!(covered(text, span), "sem[2]");
    assert!(msg.contains("takes no index"), "{msg}");
}

/// Issue 13 item 2: each error blames the component that is wrong, lists
/// everything a block contains (ranges folded) and suggests a close name.
#[test]
fn errors_point_at_the_mistake() {
    let cases: &[(&str, &str, &str)] = &[
        // A map symbol's prefix is fine; the name after it is wrong.
        (
            "tpb0.sem.rd[3]",
            "rd[3]",
            "unknown name `rd` after `tpb0.sem` (expected one of: dec, inc, read, set)",
        ),
        // A field after a register is refused as such, with its mask.
        (
            "eng0.m2s.q0.Q_CFG.EN_PREF",
            "EN_PREF",
            "`Q_CFG.EN_PREF` names a field (bits 16, mask 0x00010000): an address names a whole register; use `eng0.m2s.q0.Q_CFG` (to check the field: read32 eng0.m2s.q0.Q_CFG == VALUE mask=0x10000)",
        ),
        (
            "eng0.m2s.q0.q_cfg.en_prf",
            "en_prf",
            "`en_prf` is not a field of register Q_CFG (eng0.m2s.q0.q_cfg), and an address names a whole register",
        ),
        // The whole list, folded: q12..q15 exist too.
        (
            "eng0.m2s.q99.q_cfg",
            "q99",
            "unknown name `q99` under `eng0.m2s` (it contains: q0..q15)",
        ),
        (
            "eng0.m2ss.q0.q_cfg",
            "m2ss",
            "unknown name `m2ss` under `eng0` (it contains: m2s, s2m, gen, gen_ex, sdma_app, notific, bcast); did you mean `m2s`?",
        ),
        // Register typos get a suggestion, the S2M counterpart included.
        (
            "eng0.m2s.q0.tdrbp_lo",
            "tdrbp_lo",
            "unknown name `tdrbp_lo`: not a register of block udma_m2s_q (eng0.m2s.q0); did you mean `tdrbp_low`?",
        ),
        (
            "eng0.s2m.q0.tdrl",
            "tdrl",
            "unknown name `tdrl`: not a register of block udma_s2m_q (eng0.s2m.q0); did you mean `rdrl`?",
        ),
        // Instances that do not exist name the ones that do.
        (
            "tpb9.sbuf[p0]",
            "tpb9",
            "unknown name `tpb9`: there is no such instance (tpb0..tpb7)",
        ),
        (
            "eng140.m2s.q0.q_cfg",
            "eng140",
            "unknown name `eng140`: there is no such instance (eng0..eng131)",
        ),
        (
            "hbm9+0x0",
            "hbm9",
            "unknown name `hbm9`: there is no such instance (hbm0..hbm3)",
        ),
    ];
    for &(text, blamed, message) in cases {
        let (m, span) = error(text);
        assert!(
            m.starts_with(message),
            "`{text}`:\n  got:  {m}\n  want: {message}"
        );
        assert_eq!(covered(text, span), blamed, "`{text}`: {m}");
    }
    // A typo of a top-level name gets a suggestion.
    let (m, _) = error("hmb0+0x10");
    assert!(m.ends_with("did you mean `hbm0`?"), "{m}");
}
