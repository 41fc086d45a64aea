"""Small reusable widgets of the profui app (text bar charts, chart panels) and value formatting."""
