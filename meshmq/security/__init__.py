"""Who may do what: authentication and authorization shared by the services."""
