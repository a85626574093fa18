//! Register-file behaviour for every access kind, field overrides, reserved
//! bits, edges, INC/DEC masking, RC and W1C/W0C, on a purpose-built map.
#![allow(clippy::unwrap_used)]

use csr::{CsrAccessError, CsrMap, Delta, RegFile};

const TEST_MAP: &str = r#"{
  "block": "test_block",
  "description": "Access-kind test block.",
  "size": "0x100",
  "source": "tests",
  "registers": [
    { "name": "PLAIN", "offset": "0x00", "access": "RW", "reset": "0x12345678",
      "description": "RW without fields.", "source": "t" },
    { "name": "CFG", "offset": "0x04", "access": "RW", "description": "RW with fields.", "source": "t",
      "fields": [
        { "name": "EN", "bits": "0", "description": "enable" },
        { "name": "MODE", "bits": "5:4", "reset": "0x2", "description": "mode" },
        { "name": "BUSY", "bits": "8", "access": "RO", "description": "status" },
        { "name": "ERR", "bits": "9", "access": "W1C", "description": "sticky error" },
        { "name": "KICK", "bits": "12", "access": "WO", "description": "command" },
        { "name": "LEVEL", "bits": "23:16", "description": "level" } ] },
    { "name": "STATUS", "offset": "0x08", "access": "RO", "reset": "0x5", "description": "RO register.", "source": "t" },
    { "name": "CMD", "offset": "0x0C", "access": "WO", "description": "WO command register.", "source": "t",
      "fields": [ { "name": "GO", "bits": "0", "description": "go" },
                  { "name": "STOP", "bits": "1", "description": "stop" } ] },
    { "name": "CAUSE", "offset": "0x10", "access": "W1C", "description": "W1C register.", "source": "t" },
    { "name": "CAUSE0", "offset": "0x14", "access": "W0C", "description": "W0C register.", "source": "t" },
    { "name": "ERRSTAT", "offset": "0x18", "access": "RC", "description": "RC register.", "source": "t" },
    { "name": "DOORBELL", "offset": "0x1C", "access": "INC", "description": "INC register.", "source": "t",
      "fields": [ { "name": "VAL", "bits": "23:0", "description": "increment" } ] },
    { "name": "SHIFTED_INC", "offset": "0x20", "access": "RW", "description": "INC field at bit 8.", "source": "t",
      "fields": [ { "name": "FLAG", "bits": "0", "description": "flag" },
                  { "name": "CNT", "bits": "15:8", "access": "INC", "description": "increment" } ] },
    { "name": "SEM_DEC", "offset": "0x24", "access": "DEC", "description": "DEC register.", "source": "t" },
    { "name": "ARR", "offset": "0x40", "access": "RW", "reset": "0x1", "description": "array", "source": "t",
      "array": { "count": 4, "stride": "0x8" } },
    { "name": "NAMED", "offset": "0x80", "access": "RW", "description": "has alias", "source": "t",
      "aliases": ["SLOT[2]"] }
  ]
}"#;

fn map() -> CsrMap {
    CsrMap::from_json(TEST_MAP, "test_block.json").unwrap()
}

#[test]
fn rw_without_fields_stores_everything() {
    let m = map();
    let mut rf = RegFile::new(&m);
    assert_eq!(rf.read(0x00).unwrap().value, 0x1234_5678);
    let out = rf.write(0x00, 0xdead_beef).unwrap();
    assert_eq!(out.old, 0x1234_5678);
    assert_eq!(out.new, 0xdead_beef);
    assert_eq!(out.ignored, 0);
    assert!(!out.read_only);
    assert_eq!(out.delta, None);
    assert_eq!(rf.read(0x00).unwrap().value, 0xdead_beef);
}

#[test]
fn field_reset_composes_register_reset() {
    let m = map();
    let cfg = m.register("cfg").unwrap();
    assert_eq!(cfg.reset(), 0x20);
    assert_eq!(cfg.field("MODE").unwrap().reset(), 2);
    let masks = cfg.masks();
    assert_eq!(masks.rw, 0x00ff_0031);
    assert_eq!(masks.ro, 1 << 8);
    assert_eq!(masks.w1c, 1 << 9);
    assert_eq!(masks.wo, 1 << 12);
    assert_eq!(masks.reserved, !(0x00ff_0031 | 1 << 8 | 1 << 9 | 1 << 12));
}

#[test]
fn reserved_and_ro_bits_ignore_writes_and_are_reported() {
    let m = map();
    let mut rf = RegFile::new(&m);
    // Bit 31 reserved, bit 8 RO: both ignored; EN and LEVEL stored.
    let out = rf.write(0x04, 0x8012_0101).unwrap();
    assert_eq!(out.new, 0x0012_0001);
    assert_eq!(out.ignored, 0x8000_0100);
    assert!(!out.read_only);
    assert_eq!(rf.peek(0x04).unwrap(), 0x0012_0001);
    // Writing back what reads back reports nothing ignored.
    let out = rf.write(0x04, 0x0012_0001).unwrap();
    assert_eq!(out.ignored, 0);
}

#[test]
fn hardware_sets_ro_and_w1c_bits_software_clears_w1c() {
    let m = map();
    let mut rf = RegFile::new(&m);
    rf.hw_update(0x04, |v| v | 1 << 8 | 1 << 9).unwrap();
    assert_eq!(rf.read(0x04).unwrap().value, 0x0000_0320);
    // Writing 0 to the W1C bit leaves it; RO BUSY unchanged.
    let out = rf.write(0x04, 0x0000_0020).unwrap();
    assert_eq!(out.new & (1 << 9), 1 << 9);
    assert_eq!(out.ignored, 1 << 8, "clearing the RO bit is ignored");
    // Writing 1 clears it.
    let out = rf.write(0x04, 0x0000_0220).unwrap();
    assert_eq!(out.new & (1 << 9), 0);
    assert!(out.fell("ERR"));
    assert_eq!(out.new & (1 << 8), 1 << 8, "RO bit survives");
}

#[test]
fn edges_of_fields() {
    let m = map();
    let mut rf = RegFile::new(&m);
    let out = rf.write(0x04, 0x21).unwrap();
    assert!(out.rose("EN"));
    assert!(out.rose("en"), "field names are case-insensitive");
    assert!(!out.fell("EN"));
    assert!(!out.changed("MODE"));
    assert_eq!(out.rose_bits(), 1);
    let out = rf.write(0x04, 0x10).unwrap();
    assert!(out.fell("EN"));
    assert!(out.changed("MODE"));
    assert!(!out.rose("MODE"), "2 -> 1 is a change, not a rise");
    assert_eq!(out.field("MODE"), Some(1));
    assert_eq!(out.fell_bits(), 0x21);
}

#[test]
fn wo_bits_pulse_read_zero_and_are_not_stored() {
    let m = map();
    let mut rf = RegFile::new(&m);
    let out = rf.write(0x04, (1 << 12) | 0x20).unwrap();
    assert!(out.pulsed("KICK"));
    assert_eq!(out.pulses, 1 << 12);
    assert_eq!(out.new & (1 << 12), 0);
    assert_eq!(rf.read(0x04).unwrap().value & (1 << 12), 0);

    let out = rf.write(0x0C, 0b10).unwrap();
    assert!(out.pulsed("STOP"));
    assert!(!out.pulsed("GO"));
    assert!(!out.read_only);
    assert_eq!(rf.read(0x0C).unwrap().value, 0);
    // Bits outside GO/STOP are reserved: ignored and reported.
    let out = rf.write(0x0C, 0x101).unwrap();
    assert_eq!(out.pulses, 1);
    assert_eq!(out.ignored, 0x100);
}

#[test]
fn read_only_register_write_is_flagged_and_ignored() {
    let m = map();
    let mut rf = RegFile::new(&m);
    let out = rf.write(0x08, 0xffff_ffff).unwrap();
    assert!(out.read_only);
    assert_eq!(out.new, 5);
    assert_eq!(out.ignored, 0xffff_fffa);
    assert_eq!(rf.read(0x08).unwrap().value, 5);
    rf.hw_set(0x08, 9).unwrap();
    assert_eq!(rf.read(0x08).unwrap().value, 9);
}

#[test]
fn w1c_register_never_sets_bits() {
    let m = map();
    let mut rf = RegFile::new(&m);
    let out = rf.write(0x10, 0xffff_ffff).unwrap();
    assert_eq!(out.new, 0);
    rf.hw_set(0x10, 0b1011).unwrap();
    let out = rf.write(0x10, 0b0010).unwrap();
    assert_eq!(out.new, 0b1001);
    assert_eq!(out.ignored, 0);
}

#[test]
fn w0c_register_clears_on_zero() {
    let m = map();
    let mut rf = RegFile::new(&m);
    rf.hw_set(0x14, 0b1011).unwrap();
    let out = rf.write(0x14, !0b0010).unwrap();
    assert_eq!(out.new, 0b1001);
    let out = rf.write(0x14, 0xffff_ffff).unwrap();
    assert_eq!(out.new, 0b1001, "writing 1s changes nothing");
}

#[test]
fn rc_register_clears_on_read_but_peek_does_not() {
    let m = map();
    let mut rf = RegFile::new(&m);
    rf.hw_set(0x18, 0xa5).unwrap();
    assert_eq!(rf.peek(0x18).unwrap(), 0xa5);
    let r = rf.read(0x18).unwrap();
    assert_eq!(r.value, 0xa5);
    assert_eq!(r.cleared, 0xa5);
    let r = rf.read(0x18).unwrap();
    assert_eq!(r.value, 0);
    assert_eq!(r.cleared, 0);
    let out = rf.write(0x18, 0xff).unwrap();
    assert!(out.read_only);
    assert_eq!(out.ignored, 0xff);
}

#[test]
fn inc_is_masked_by_its_field_and_reads_zero() {
    let m = map();
    let mut rf = RegFile::new(&m);
    let out = rf.write(0x1C, 0xff00_0005).unwrap();
    assert_eq!(out.delta, Some(Delta::Inc(5)));
    assert_eq!(out.increment(), Some(5));
    assert_eq!(
        out.ignored, 0xff00_0000,
        "bits above the 24-bit field are reserved"
    );
    assert_eq!(rf.read(0x1C).unwrap().value, 0);
    let out = rf.write(0x1C, 0x00ff_ffff).unwrap();
    assert_eq!(out.increment(), Some(0x00ff_ffff));
}

#[test]
fn inc_field_is_shifted_down_and_other_fields_still_work() {
    let m = map();
    let mut rf = RegFile::new(&m);
    let out = rf.write(0x20, 0x0000_0301).unwrap();
    assert_eq!(out.increment(), Some(3));
    assert!(out.rose("FLAG"));
    assert_eq!(rf.read(0x20).unwrap().value, 1, "the INC field reads 0");
}

#[test]
fn dec_reports_a_decrement() {
    let m = map();
    let mut rf = RegFile::new(&m);
    let out = rf.write(0x24, 7).unwrap();
    assert_eq!(out.delta, Some(Delta::Dec(7)));
    assert_eq!(out.decrement(), Some(7));
    assert_eq!(out.increment(), None);
    assert_eq!(rf.read(0x24).unwrap().value, 0);
}

#[test]
fn access_errors() {
    let m = map();
    let mut rf = RegFile::new(&m);
    assert_eq!(
        rf.read(0x02).unwrap_err(),
        CsrAccessError::Misaligned { offset: 2 }
    );
    assert_eq!(
        rf.write(0x28, 1).unwrap_err(),
        CsrAccessError::Hole { offset: 0x28 }
    );
    assert_eq!(
        rf.write(0x44, 1).unwrap_err(),
        CsrAccessError::Hole { offset: 0x44 },
        "gap between array elements"
    );
    assert_eq!(
        rf.read(0x100).unwrap_err(),
        CsrAccessError::OutsideBlock {
            offset: 0x100,
            size: 0x100
        }
    );
    assert!(rf.hw_set(u64::MAX - 3, 0).is_err());
    assert!(rf.read(0x02).unwrap_err().to_string().contains("0x2"));
}

#[test]
fn arrays_lookup_and_names() {
    let m = map();
    assert_eq!(m.find("arr", Some(3)), Some(0x58));
    assert_eq!(m.find("ARR", Some(4)), None);
    assert_eq!(m.find("ARR", None), None);
    assert_eq!(m.find("plain", Some(0)), None);
    let r = m.register_at(0x48).unwrap();
    assert_eq!(r.name(), "ARR[1]");
    assert_eq!(r.index(), Some(1));
    assert_eq!(m.lookup("arr[0x2]").unwrap().offset(), 0x50);
    assert_eq!(m.lookup(" doorbell ").unwrap().offset(), 0x1C);
    assert_eq!(m.lookup("slot[2]").unwrap().name(), "NAMED");
    assert!(m.lookup("arr[").is_none());
    assert!(m.lookup("nope").is_none());
    assert_eq!(
        m.decode("cfg", 0x0012_0321),
        Some(vec![
            ("EN", 1),
            ("MODE", 2),
            ("BUSY", 1),
            ("ERR", 1),
            ("KICK", 0),
            ("LEVEL", 0x12)
        ])
    );
}

#[test]
fn diff_dump_and_reset() {
    let m = map();
    let mut rf = RegFile::new(&m);
    assert!(rf.diff_from_reset().is_empty());
    let _ = rf.write(0x50, 7).unwrap();
    let _ = rf.write(0x04, 0x21).unwrap(); // equals reset 0x20 | EN
    let _ = rf.write(0x0C, 1).unwrap(); // WO: nothing stored
    let diff = rf.diff_from_reset();
    let rendered: Vec<(String, String)> = diff
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string()))
        .collect();
    assert_eq!(
        rendered,
        vec![
            ("ARR[2]".to_string(), "0x00000007".to_string()),
            ("CFG".to_string(), "0x00000021".to_string()),
        ]
    );
    let dump = rf.dump();
    assert_eq!(dump.block, "test_block");
    assert_eq!(dump.registers.len(), m.element_count());
    assert!(dump.registers.windows(2).all(|w| w[0].offset < w[1].offset));
    let json = serde_json::to_string(&dump).unwrap();
    let back: csr::CsrDump = serde_json::from_str(&json).unwrap();
    assert_eq!(back, dump);
    assert_eq!(rf.value_of("arr[2]"), Some(7));
    rf.reset();
    assert!(rf.diff_from_reset().is_empty());
    assert_eq!(rf.value_of("arr[2]"), Some(1));
}

#[test]
fn hw_set_keeps_reserved_bits_zero() {
    let m = map();
    let mut rf = RegFile::new(&m);
    let old = rf.hw_set(0x04, 0xffff_ffff).unwrap();
    assert_eq!(old, 0x20);
    let masks = m.register("CFG").unwrap().masks();
    assert_eq!(rf.value(0x04).unwrap(), !masks.reserved);
    // WO bits may be stored by hardware but always read 0.
    assert_eq!(rf.peek(0x04).unwrap(), !masks.reserved & !(1 << 12));
}
