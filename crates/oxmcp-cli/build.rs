//! Link flags of the `oxmcp` binary.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // Packed relative relocations (DT_RELR, glibc 2.36+): the binary's ~50,000 relative
    // relocations take a few KiB instead of 1.2 MB that the dynamic loader reads at every
    // start. A linker that does not know the flag warns and ignores it.
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
