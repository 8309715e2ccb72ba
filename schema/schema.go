package schema

import _ "embed" // for the schema file

// Scenario is the JSON Schema of a scenario file, byte for byte the file
// schema/scenario.schema.json of the repository.
//
//go:embed scenario.schema.json
var Scenario string

// URL is where the schema of the main branch is published: it works in a
// scenario file anywhere, without a checkout.
const URL = "https://raw.githubusercontent.com/scenariomock/scenariomock/main/schema/scenario.schema.json"

// Modeline is the first line of a scenario file that points the YAML
// language server (VS Code's YAML extension, Neovim's yamlls, ...) at the
// schema. To YAML, and to the loader, it is a comment.
const Modeline = "# yaml-language-server: $schema=" + URL
