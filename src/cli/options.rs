//! The one place the command line becomes the front ends' options: each
//! clap struct turned into the plain struct its front end takes, so no
//! front end knows clap and each can be called (from a test, a bench,
//! another front end) with exactly what it needs.

use super::{GenerateArgs, ImportArgs, ImportFormat, UsageError};
use crate::{generate, import};

impl From<GenerateArgs> for generate::Options {
    fn from(a: GenerateArgs) -> Self {
        generate::Options {
            services: a.services,
            like: a.like,
            seed: a.seed,
            rps: a.rps,
            output: a.output,
        }
    }
}

impl From<ImportFormat> for import::Format {
    fn from(f: ImportFormat) -> Self {
        match f {
            ImportFormat::Jaeger => import::Format::Jaeger,
            ImportFormat::Zipkin => import::Format::Zipkin,
            ImportFormat::Servicegraph => import::Format::Servicegraph,
            ImportFormat::Kiali => import::Format::Kiali,
            ImportFormat::JaegerTrace => import::Format::JaegerTrace,
        }
    }
}

impl ImportArgs {
    /// The import these flags ask for: `--virtual-client` only with the
    /// servicegraph format, and not empty.
    pub fn options(self) -> Result<import::Options, UsageError> {
        let format = import::Format::from(self.format);
        match self.virtual_client.as_deref() {
            Some(_) if format != import::Format::Servicegraph => {
                return Err(UsageError(format!(
                    "--virtual-client: only the servicegraph format names the callers outside the mesh (not {})",
                    format.name()
                )))
            }
            Some("") => return Err(UsageError("--virtual-client: give a name".into())),
            _ => {}
        }
        Ok(import::Options {
            format,
            source: self.source,
            output: self.output,
            name: self.name,
            rps: self.rps,
            with_faults: self.with_faults,
            virtual_client: self.virtual_client,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn an_import_format_is_named_in_messages_as_the_command_line_spells_it() {
        let names: Vec<String> = ImportFormat::value_variants()
            .iter()
            .map(|f| {
                let plain = import::Format::from(*f);
                assert_eq!(plain.name(), super::super::value_name(f));
                plain.name().to_string()
            })
            .collect();
        let all: Vec<&str> = import::Format::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, all);
    }

    #[test]
    fn a_virtual_client_is_refused_before_anything_is_read_unless_servicegraph_names_one() {
        let args = |format: ImportFormat, client: Option<&str>| ImportArgs {
            format,
            source: "/nonexistent/graph.json".into(),
            output: None,
            name: None,
            rps: None,
            with_faults: false,
            virtual_client: client.map(String::from),
        };
        let e = args(ImportFormat::Kiali, Some("edge"))
            .options()
            .unwrap_err();
        assert_eq!(
            e.0,
            "--virtual-client: only the servicegraph format names the callers outside the mesh (not kiali)"
        );
        let e = args(ImportFormat::Servicegraph, Some(""))
            .options()
            .unwrap_err();
        assert_eq!(e.0, "--virtual-client: give a name");
        let o = args(ImportFormat::Servicegraph, Some("edge"))
            .options()
            .unwrap();
        assert_eq!(o.virtual_client.as_deref(), Some("edge"));
        assert_eq!(o.format, import::Format::Servicegraph);
        assert!(args(ImportFormat::Jaeger, None).options().is_ok());
    }
}
