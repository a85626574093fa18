//! Expands the built-in map, `csr-maps/soc-map.json`, when the crate is
//! built: the same code a process runs (the crate's own modules, included
//! below) expands and validates it, and the result is written to
//! `$OUT_DIR` as an image that `soc_map::trn2()` reads instead of expanding
//! the map at every start (`src/image.rs`). A map that does not expand
//! gives an empty image: the process then expands it and reports why, as
//! before. Never fails the build.

#![allow(dead_code, unused_imports)]

use std::path::PathBuf;

#[path = "src/expand.rs"]
mod expand;
#[path = "src/hex.rs"]
mod hex;
#[path = "src/image.rs"]
mod image;
#[path = "src/map.rs"]
mod map;
#[path = "src/name_index.rs"]
mod name_index;
#[path = "src/precheck.rs"]
mod precheck;
#[path = "src/spec.rs"]
mod spec;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let json = manifest.join("../../csr-maps/soc-map.json");
    println!("cargo:rerun-if-changed={}", json.display());
    let (bytes, text) = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| map::SocMap::from_json(&t, "csr-maps/soc-map.json").ok())
        .map(|m| image::encode(&m))
        .unwrap_or_default();
    let written = std::fs::write(out.join("trn2-map.bin"), bytes)
        .and_then(|()| std::fs::write(out.join("trn2-map.txt"), text));
    if let Err(e) = written {
        println!("cargo:warning=soc-map: cannot write the map image: {e}");
    }
}
