"""HTML views of the dashboard: function views, reads through selectors, writes through
services, htmx requests answered with the page's partials."""
