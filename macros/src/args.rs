//! Arguments of `#[mem_guard(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Error, LitInt, LitStr, Result};

/// The accepted forms, listed in every argument error.
pub const ACCEPTED: &str = "accepted arguments: loop = \"label\", warmup = <iterations>, \
window = <iterations>, tolerance = \"1MiB\", horizon = \"8h\" | \"1000000 iterations\", budget = \"70GiB\", on_leak = \"warn\" | \"panic\", \
device = \"auto\" | \"host\" | \"cuda:N\", source = \"nvml-process\" | \"cuda-device\" | \"cuda-pool\" | \"cubecl\" | \"host-allocator\" | \"host-rss\", \
report = \"path/to/report.json\", lines";

/// Source names `source = ".."` takes (the runtime's names and short forms, as `MEMLINT_SOURCE`).
const SOURCES: &[&str] = &[
    "auto",
    "nvml-process",
    "nvml",
    "cuda-device",
    "mem-get-info",
    "cuda-pool",
    "cuda",
    "pool",
    "cubecl",
    "burn",
    "host-allocator",
    "allocator",
    "heap",
    "host-rss",
    "rss",
];

/// Where to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Auto,
    Host,
    Cuda(u32),
}

/// How far ahead a leak's cost is judged: a number of iterations or of seconds of wall time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Horizon {
    Iterations(u64),
    Seconds(f64),
}

/// Parsed arguments; `None` = the runtime's default.
#[derive(Debug, Default)]
pub struct Args {
    /// Label of the sampled loop (without the quote), with the string's span.
    pub loop_label: Option<(String, Span)>,
    pub warmup: Option<u64>,
    pub window: Option<u64>,
    pub tolerance: Option<u64>,
    pub horizon: Option<Horizon>,
    pub budget: Option<u64>,
    /// `true` = panic.
    pub on_leak_panic: Option<bool>,
    pub device: Option<Device>,
    pub report: Option<String>,
    /// `source = "nvml-process"`: the pinned primary source.
    pub source: Option<String>,
    /// `lines`: read memory after every statement of the sampled loop's body.
    pub lines: Option<bool>,
}

/// Parses the attribute's arguments.
pub fn parse(tokens: TokenStream) -> Result<Args> {
    let mut args = Args::default();
    syn::meta::parser(|meta| args.parse_one(meta)).parse2(tokens)?;
    Ok(args)
}

/// Sets `slot` once; a second occurrence of the key is an error at the key.
fn set_once<T>(slot: &mut Option<T>, value: T, meta: &ParseNestedMeta) -> Result<()> {
    if slot.is_some() {
        let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        return Err(meta.error(format!("`{key}` given twice")));
    }
    *slot = Some(value);
    Ok(())
}

impl Args {
    fn parse_one(&mut self, meta: ParseNestedMeta) -> Result<()> {
        let Some(key) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(meta.error(format!("unknown argument; {ACCEPTED}")));
        };
        match key.as_str() {
            "loop" => {
                let lit: LitStr = value(&meta, "loop = \"label\"")?.parse()?;
                let label = lit.value().trim_start_matches('\'').to_owned();
                if label.is_empty() || !label.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    return Err(Error::new(
                        lit.span(),
                        "expected a loop label such as \"train\" (for `'train: for ...`)",
                    ));
                }
                set_once(&mut self.loop_label, (label, lit.span()), &meta)
            }
            "warmup" => {
                let n = iterations(&meta, "warmup = 10", 0)?;
                set_once(&mut self.warmup, n, &meta)
            }
            "window" => {
                let n = iterations(&meta, "window = 16", 3)?;
                set_once(&mut self.window, n, &meta)
            }
            "tolerance" => {
                let n = size(&meta, "tolerance = \"1MiB\"")?;
                set_once(&mut self.tolerance, n, &meta)
            }
            "horizon" => {
                let n = horizon(&meta)?;
                set_once(&mut self.horizon, n, &meta)
            }
            "budget" => {
                let n = size(&meta, "budget = \"70GiB\"")?;
                if n == 0 {
                    return Err(meta.error("`budget` must be more than 0 bytes"));
                }
                set_once(&mut self.budget, n, &meta)
            }
            "on_leak" => {
                let lit: LitStr = value(&meta, "on_leak = \"warn\" | \"panic\"")?.parse()?;
                let panic = match lit.value().as_str() {
                    "warn" => false,
                    "panic" => true,
                    other => {
                        return Err(Error::new(
                            lit.span(),
                            format!("unknown `on_leak` value `{other}`; expected \"warn\" or \"panic\""),
                        ));
                    }
                };
                set_once(&mut self.on_leak_panic, panic, &meta)
            }
            "device" => {
                let lit: LitStr = value(&meta, "device = \"cuda:0\"")?.parse()?;
                let device = parse_device(&lit.value()).ok_or_else(|| {
                    Error::new(
                        lit.span(),
                        format!(
                            "unknown device `{}`; expected \"auto\", \"host\" or \"cuda:N\" (e.g. \"cuda:0\")",
                            lit.value()
                        ),
                    )
                })?;
                set_once(&mut self.device, device, &meta)
            }
            "source" => {
                let lit: LitStr = value(&meta, "source = \"nvml-process\"")?.parse()?;
                let name = lit.value().trim().to_ascii_lowercase();
                if !SOURCES.contains(&name.as_str()) {
                    return Err(Error::new(
                        lit.span(),
                        format!(
                            "unknown source `{}`; expected \"nvml-process\", \"cuda-device\", \"cuda-pool\", \"cubecl\", \"host-allocator\", \"host-rss\" or \"auto\"",
                            lit.value()
                        ),
                    ));
                }
                set_once(&mut self.source, name, &meta)
            }
            "report" => {
                let lit: LitStr = value(&meta, "report = \"target/memlint/train.json\"")?.parse()?;
                if lit.value().trim().is_empty() {
                    return Err(Error::new(lit.span(), "`report` needs a file path"));
                }
                set_once(&mut self.report, lit.value(), &meta)
            }
            "lines" => {
                if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                    return Err(meta.error("`lines` takes no value: write `#[mem_guard(lines)]`"));
                }
                set_once(&mut self.lines, true, &meta)
            }
            _ => Err(meta.error(format!("unknown argument `{key}`; {ACCEPTED}"))),
        }
    }
}

/// The `= value` part, with an error that shows the expected form when it is missing.
fn value<'a>(meta: &ParseNestedMeta<'a>, form: &str) -> Result<syn::parse::ParseStream<'a>> {
    if !meta.input.peek(syn::Token![=]) {
        return Err(meta.error(format!("expected `{form}`")));
    }
    meta.value()
}

fn iterations(meta: &ParseNestedMeta, form: &str, min: u64) -> Result<u64> {
    let lit: LitInt = value(meta, form)?
        .parse()
        .map_err(|e| Error::new(e.span(), format!("expected an integer number of iterations, as in `{form}`")))?;
    let n: u64 = lit.base10_parse()?;
    if n < min {
        let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        return Err(Error::new(lit.span(), format!("`{key}` must be at least {min} iterations")));
    }
    Ok(n)
}

/// A size: a string such as "1MiB" or an integer number of bytes.
fn size(meta: &ParseNestedMeta, form: &str) -> Result<u64> {
    let input = value(meta, form)?;
    if input.peek(LitInt) {
        let lit: LitInt = input.parse()?;
        return lit.base10_parse();
    }
    let lit: LitStr = input.parse().map_err(|e| Error::new(e.span(), format!("expected a size, as in `{form}`")))?;
    parse_size(&lit.value()).map_err(|msg| Error::new(lit.span(), msg))
}

/// A horizon: an integer number of iterations, or a string such as "8h", "30min", "2 days",
/// "1000000 iterations".
fn horizon(meta: &ParseNestedMeta) -> Result<Horizon> {
    const FORM: &str = "horizon = \"8h\"";
    let input = value(meta, FORM)?;
    let horizon = if input.peek(LitInt) {
        let lit: LitInt = input.parse()?;
        Horizon::Iterations(lit.base10_parse()?)
    } else {
        let lit: LitStr =
            input.parse().map_err(|e| Error::new(e.span(), format!("expected a duration, as in `{FORM}`")))?;
        parse_horizon(&lit.value()).map_err(|msg| Error::new(lit.span(), msg))?
    };
    if matches!(horizon, Horizon::Iterations(0)) || matches!(horizon, Horizon::Seconds(s) if s <= 0.0) {
        return Err(meta.error("`horizon` must be more than 0"));
    }
    Ok(horizon)
}

/// Parses "8h", "30 min", "90s", "2d", "1000000 iterations" (units s, min, h, d and
/// iterations/steps/calls; plurals and short forms accepted, any case).
pub fn parse_horizon(text: &str) -> std::result::Result<Horizon, String> {
    let bad = || {
        format!(
            "invalid horizon `{text}`: expected a number with a unit, e.g. \"8h\", \"30min\", \"2d\", \
             \"1000000 iterations\" (units: s, min, h, d, iterations)"
        )
    };
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 = number.replace('_', "").parse().map_err(|_| bad())?;
    let seconds = match unit.trim().to_ascii_lowercase().as_str() {
        "iteration" | "iterations" | "it" | "step" | "steps" | "call" | "calls" => {
            if number.fract() != 0.0 || number >= u64::MAX as f64 {
                return Err(bad());
            }
            return Ok(Horizon::Iterations(number as u64));
        }
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
        "d" | "day" | "days" => 86_400.0,
        _ => return Err(bad()),
    };
    let seconds = number * seconds;
    if !seconds.is_finite() {
        return Err(bad());
    }
    Ok(Horizon::Seconds(seconds))
}

/// Parses "512", "1.5GB", "1MiB", "70 GiB" (units B, KB, KiB, MB, MiB, GB, GiB, TB, TiB; any case).
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let bad = || {
        format!(
            "invalid size `{text}`: expected a number with an optional unit, e.g. \"512KiB\", \"1MiB\", \
             \"1.5GB\", \"70GiB\" (units: B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)"
        )
    };
    let text_trim = text.trim();
    let split = text_trim.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text_trim.len());
    let (number, unit) = text_trim.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let factor: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "kib" => 1024.0,
        "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tb" => 1e12,
        "tib" => 1024.0f64.powi(4),
        _ => return Err(bad()),
    };
    let bytes = number * factor;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes.round() as u64)
}

fn parse_device(text: &str) -> Option<Device> {
    match text.trim() {
        "auto" => Some(Device::Auto),
        "host" | "cpu" => Some(Device::Host),
        other => {
            let n = other.strip_prefix("cuda:")?;
            n.parse().ok().map(Device::Cuda)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("70GiB"), Ok(70 << 30));
        assert_eq!(parse_size("1.5 GB"), Ok(1_500_000_000));
        assert_eq!(parse_size("4kib"), Ok(4096));
        assert!(parse_size("7 potatoes").unwrap_err().contains("invalid size `7 potatoes`"));
        assert!(parse_size("").is_err());
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("1e30TiB").is_err());
    }

    #[test]
    fn horizons() {
        assert_eq!(parse_horizon("8h"), Ok(Horizon::Seconds(28_800.0)));
        assert_eq!(parse_horizon("30 min"), Ok(Horizon::Seconds(1800.0)));
        assert_eq!(parse_horizon("2 days"), Ok(Horizon::Seconds(172_800.0)));
        assert_eq!(parse_horizon("1000000 iterations"), Ok(Horizon::Iterations(1_000_000)));
        assert_eq!(parse_horizon("1_000_000 steps"), Ok(Horizon::Iterations(1_000_000)));
        assert!(parse_horizon("1.5 iterations").is_err());
        assert!(parse_horizon("8").unwrap_err().contains("invalid horizon `8`"));
        assert!(parse_horizon("soon").is_err());
        let args = parse(quote::quote!(horizon = 5000)).unwrap();
        assert_eq!(args.horizon, Some(Horizon::Iterations(5000)));
        let err = parse(quote::quote!(horizon = "0h")).unwrap_err();
        assert_eq!(err.to_string(), "`horizon` must be more than 0");
    }

    #[test]
    fn devices() {
        assert_eq!(parse_device("cuda:1"), Some(Device::Cuda(1)));
        assert_eq!(parse_device("host"), Some(Device::Host));
        assert_eq!(parse_device("auto"), Some(Device::Auto));
        assert_eq!(parse_device("cuda"), None);
        assert_eq!(parse_device("cuda:x"), None);
    }

    #[test]
    fn duplicate_and_unknown_keys_are_errors() {
        let err = parse(quote::quote!(warmup = 1, warmup = 2)).unwrap_err();
        assert_eq!(err.to_string(), "`warmup` given twice");
        let err = parse(quote::quote!(windows = 3)).unwrap_err();
        assert!(err.to_string().starts_with("unknown argument `windows`; accepted arguments:"));
        let args = parse(quote::quote!(loop = "'train", budget = "2GiB", on_leak = "panic")).unwrap();
        assert_eq!(args.loop_label.map(|l| l.0).as_deref(), Some("train"));
        assert_eq!(args.budget, Some(2 << 30));
        assert_eq!(args.on_leak_panic, Some(true));
        let args = parse(quote::quote!(lines, warmup = 3)).unwrap();
        assert_eq!((args.lines, args.warmup), (Some(true), Some(3)));
        let err = parse(quote::quote!(lines = true)).unwrap_err();
        assert_eq!(err.to_string(), "`lines` takes no value: write `#[mem_guard(lines)]`");
    }
}
