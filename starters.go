package main

// The commands that help people start: schema, init, examples, and the
// completion of example names (cobra's own completion command prints the
// scripts).

import (
	_ "embed" // the starter file
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/scenariomock/scenariomock/schema"
)

// starter is the commented scenario file init writes.
//
//go:embed starter/scenarios.yaml
var starter []byte

// starterName is the name of the file init writes.
const starterName = "scenarios.yaml"

func newSchemaCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of scenario files (for editors; see the README's Editor support)",
		Long: `Print the JSON Schema (draft 2020-12) of scenario files, exactly the file
schema/scenario.schema.json of this build. Editors with the YAML language
server complete and check a scenario file that starts with

  ` + schema.Modeline + `

or, offline, with the schema saved next to it:

  scenariomock schema > scenario.schema.json
  # yaml-language-server: $schema=./scenario.schema.json`,
		Args: cobra.NoArgs,
		RunE: failing(func(*cobra.Command, []string) error {
			_, err := io.WriteString(stdout, schema.Scenario)
			return err
		}),
	}
}

func newInitCmd(stdout io.Writer) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [directory]",
		Short: "Write a commented starter scenario file, " + starterName + ", into a directory (default .)",
		Long: `Write a commented starter scenario file, ` + starterName + `, into the directory
(default the current one), creating the directory if needed. An existing
file is left alone (exit 1) unless --force is given.`,
		Args: cobra.MaximumNArgs(1),
		RunE: failing(func(_ *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			path, err := writeStarter(dir, force)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s\nserve it:  scenariomock serve %s\ncheck it:  scenariomock validate %s\n", path, dir, dir)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite "+starterName+" if it exists")
	return cmd
}

// writeStarter writes the starter file into dir. Without force, the file
// is created only if it does not exist (O_EXCL), so that two inits, or an
// init next to a file being edited, cannot lose anything.
func writeStarter(dir string, force bool) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, starterName)
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("%s already exists; leave it, or run init --force to overwrite it", path)
	}
	if err != nil {
		return "", err
	}
	if _, err := f.Write(starter); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

func newExamplesCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "examples [name]",
		Short: "List the built-in examples, or print one (scenariomock examples payments-stateful > my.yaml)",
		Long: `With no name, list the built-in examples, each with what it is for. With a
name, print that example, to start from a copy:

  scenariomock examples payments-stateful > payments.yaml

serve and routes take the same names with --example.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeExampleArg,
		RunE: failing(func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return listExamples(stdout)
			}
			_, data, err := exampleNamed("examples", args[0])
			if err != nil {
				return err
			}
			_, err = stdout.Write(data)
			return err
		}),
	}
}

// listExamples prints each example's name and the description: field of
// its file.
func listExamples(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, name := range exampleNames() {
		_, data, err := example(name)
		if err != nil {
			return err
		}
		var head struct {
			Description string `yaml:"description"`
		}
		if err := yaml.Unmarshal(data, &head); err != nil {
			return fmt.Errorf("examples/%s.yaml: %w", name, err)
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, head.Description)
	}
	return tw.Flush()
}

// completeExamples completes a built-in example's name, for --example and
// the argument of examples.
func completeExamples(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, name := range exampleNames() {
		if strings.HasPrefix(name, toComplete) {
			out = append(out, name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func completeExampleArg(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeExamples(cmd, args, toComplete)
}
