package app

// NewCommandWithSetup is NewCommand with setup in place of the controllers'.
var NewCommandWithSetup = newCommand

// WholeSeconds is how the retention is stored.
var WholeSeconds = wholeSeconds
