"""Any database SQLAlchemy reaches: the engine (`engine`), one class per database (`backends`),
and the SQL as `text()` takes it (`statements`). Imported only when a project has a `url:` connection."""

from .engine import SQLAlchemyEngine

__all__ = ["SQLAlchemyEngine"]
