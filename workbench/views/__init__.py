"""Panel views: one concern per module; they call workbench metrics, never compute inline."""
