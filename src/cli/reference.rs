//! The command reference of `docs/commands.md`, written from the flags
//! themselves: each command's usage line, then a row per flag with its
//! value, its default and the first line of its help.

use std::fmt::Write as _;

use clap::CommandFactory;

use super::Opts;

/// The reference as Markdown.
pub fn markdown() -> String {
    let mut top = Opts::command();
    top.build();
    let mut out = String::from(
        "`chaoslab TOPOLOGY` is `chaoslab run TOPOLOGY`: the live dashboard, or with\n`--headless` a run for scripts and CI.\n",
    );
    for cmd in top.get_subcommands() {
        if cmd.get_name() == "help" {
            continue;
        }
        let _ = writeln!(out, "\n### `chaoslab {}`\n", cmd.get_name());
        if let Some(about) = cmd.get_about() {
            let _ = writeln!(out, "{about}\n");
        }
        let usage = cmd.clone().render_usage().to_string();
        let usage = usage.trim_start_matches("Usage: ");
        let _ = writeln!(out, "```\n{usage}\n```\n");
        let _ = writeln!(
            out,
            "| flag | value | default | what it does |\n|---|---|---|---|"
        );
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_hide_set() || id == "help" || id == "version" {
                continue;
            }
            let flag = match (arg.get_long(), arg.get_short()) {
                (Some(l), Some(s)) => format!("`-{s}`, `--{l}`"),
                (Some(l), None) => format!("`--{l}`"),
                (None, Some(s)) => format!("`-{s}`"),
                (None, None) => format!("`{}`", id.to_uppercase()),
            };
            let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
            let value = match arg.get_value_names() {
                Some(names) if takes_value && arg.get_long().is_some() => names
                    .iter()
                    .map(|n| format!("`{}`", n.to_string().replace('|', "\\|")))
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => String::new(),
            };
            let default = if takes_value {
                arg.get_default_values()
                    .iter()
                    .map(|v| format!("`{}`", v.to_string_lossy()))
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                String::new()
            };
            let help = arg
                .get_help()
                .map(|h| h.to_string())
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or("")
                .replace('|', "\\|");
            let _ = writeln!(out, "| {flag} | {value} | {default} | {help} |");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn docs_give_every_command_and_flag_as_clap_knows_them() {
        let md = super::markdown();
        for cmd in [
            "run", "compare", "model", "check", "serve", "node", "load", "k8s", "tap", "tour",
        ] {
            assert!(md.contains(&format!("### `chaoslab {cmd}`")), "{cmd}");
        }
        assert!(md.contains("| `--headless` |"), "{md}");
        crate::docs::check_block("docs/commands.md", "commands", &md);
    }
}
