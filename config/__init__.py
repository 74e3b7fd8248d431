"""Settings (environment) and the policy file schema, plus the shipped default policy."""
