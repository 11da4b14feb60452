package main

type initCmd struct{}

func (c *initCmd) Help() string {
	return `Creates <root>/state/mail/ and <root>/.gitignore (which keeps runtime/ and
in-flight temp files out of git). Running it again changes nothing. Other
commands create the root on their first write, so init is optional.`
}

func (c *initCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	return s.Init()
}
