// ListStoreCLI
