// Package settingsschema describes the agent and conversation settings the
// OpenHands web frontend renders (its LLM, Condenser and Verification
// pages, and the conversation defaults) in the shape OpenHands' SDK exports
// them: {model_name, sections: [{key, label, variant, fields: [...]}]}.
// Field keys are dotted paths into agent_settings (or
// conversation_settings). Both the control plane (GET
// /api/v1/settings/agent-schema) and the agent server serve these schemas,
// so the package imports nothing but the standard library.
package settingsschema

// Value types a field may have.
const (
	String  = "string"
	Integer = "integer"
	Number  = "number"
	Boolean = "boolean"
	Array   = "array"
	Object  = "object"
)

// Prominence says how visible a field is on its page.
const (
	Critical = "critical"
	Major    = "major"
	Minor    = "minor"
)

// Choice is one allowed value of a field.
type Choice struct {
	Label string `json:"label"`
	Value any    `json:"value"`
}

// Field is one setting.
type Field struct {
	Key          string   `json:"key"`
	Label        string   `json:"label"`
	Description  *string  `json:"description" acs:"emitnull"`
	Section      string   `json:"section"`
	SectionLabel string   `json:"section_label"`
	ValueType    string   `json:"value_type"`
	Default      any      `json:"default" acs:"emitnull"`
	Choices      []Choice `json:"choices"`
	DependsOn    []string `json:"depends_on"`
	Prominence   string   `json:"prominence"`
	Secret       bool     `json:"secret"`
	Required     bool     `json:"required"`
}

// Section is a group of fields (one settings page or part of one).
// Variant tags sections that belong to one agent kind ("openhands");
// nil is shared.
type Section struct {
	Key     string  `json:"key"`
	Label   string  `json:"label"`
	Fields  []Field `json:"fields"`
	Variant *string `json:"variant" acs:"emitnull"`
}

// Schema is a settings model's schema.
type Schema struct {
	ModelName string    `json:"model_name"`
	Sections  []Section `json:"sections"`
}

func str(s string) *string { return &s }

type fieldSpec struct {
	key, label, desc, typ, prominence string
	def                               any
	choices                           []Choice
	dependsOn                         []string
	secret, required                  bool
}

func section(key, label string, variant *string, specs ...fieldSpec) Section {
	s := Section{Key: key, Label: label, Variant: variant, Fields: []Field{}}
	for _, f := range specs {
		fd := Field{Key: f.key, Label: f.label, Section: key, SectionLabel: label, ValueType: f.typ,
			Default: f.def, Choices: f.choices, DependsOn: f.dependsOn, Prominence: f.prominence,
			Secret: f.secret, Required: f.required}
		if fd.Choices == nil {
			fd.Choices = []Choice{}
		}
		if fd.DependsOn == nil {
			fd.DependsOn = []string{}
		}
		if f.desc != "" {
			fd.Description = str(f.desc)
		}
		s.Fields = append(s.Fields, fd)
	}
	return s
}

// Agent returns the agent settings schema: the LLM, condenser and
// verification sections (the OpenHands agent variant).
func Agent() Schema {
	oh := str("openhands")
	return Schema{ModelName: "AgentSettings", Sections: []Section{
		section("llm", "LLM", nil,
			fieldSpec{key: "llm.model", label: "Model", desc: "The model the agent uses, as provider/model (LiteLLM naming).", typ: String, prominence: Critical, def: "", required: true},
			fieldSpec{key: "llm.api_key", label: "API key", desc: "The key for the model's provider; stored sealed and never shown again.", typ: String, prominence: Critical, secret: true},
			fieldSpec{key: "llm.base_url", label: "Base URL", desc: "An OpenAI-compatible endpoint; empty for the provider's default.", typ: String, prominence: Major},
			fieldSpec{key: "llm.temperature", label: "Temperature", desc: "Sampling temperature; empty for the model's default.", typ: Number, prominence: Minor},
			fieldSpec{key: "llm.max_output_tokens", label: "Max output tokens", desc: "Upper bound on the tokens of one completion.", typ: Integer, prominence: Minor},
			fieldSpec{key: "llm.num_retries", label: "Retries", desc: "Retries of a failed LLM call.", typ: Integer, prominence: Minor, def: 5},
			fieldSpec{key: "llm.timeout", label: "Timeout (s)", desc: "Seconds one LLM call may take.", typ: Integer, prominence: Minor},
		),
		section("condenser", "Condenser", oh,
			fieldSpec{key: "condenser.enabled", label: "Enable memory condensation", desc: "Summarise old events when the conversation grows long.", typ: Boolean, prominence: Major, def: true},
			fieldSpec{key: "condenser.max_size", label: "Max events", desc: "Events kept before the history is condensed.", typ: Integer, prominence: Minor, def: 120, dependsOn: []string{"condenser.enabled"}},
		),
		section("verification", "Verification", oh,
			fieldSpec{key: "verification.critic_enabled", label: "Enable critic", desc: "Have a critic model review the agent's finished work.", typ: Boolean, prominence: Major, def: false},
			fieldSpec{key: "verification.critic_mode", label: "Critic mode", desc: "When the critic runs.", typ: String, prominence: Minor, def: "finish_and_message",
				choices:   []Choice{{Label: "On finish and on messages", Value: "finish_and_message"}, {Label: "On finish only", Value: "finish"}},
				dependsOn: []string{"verification.critic_enabled"}},
		),
	}}
}

// Conversation returns the conversation settings schema (defaults of new
// conversations).
func Conversation() Schema {
	return Schema{ModelName: "ConversationSettings", Sections: []Section{
		section("general", "General", nil,
			fieldSpec{key: "max_iterations", label: "Max iterations", desc: "Agent steps one run may take.", typ: Integer, prominence: Major, def: 500},
			fieldSpec{key: "confirmation_mode", label: "Confirmation mode", desc: "Ask before the agent runs actions.", typ: Boolean, prominence: Major, def: false},
			fieldSpec{key: "security_analyzer", label: "Security analyzer", desc: "What rates an action's risk when confirmation mode is on.", typ: String, prominence: Minor, def: "llm",
				choices: []Choice{{Label: "LLM", Value: "llm"}, {Label: "None", Value: "none"}}, dependsOn: []string{"confirmation_mode"}},
		),
	}}
}
