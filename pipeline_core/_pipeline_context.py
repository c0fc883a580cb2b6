"""PipelineContext: what every role service of one pipeline shares: its config, filled in with
the caller's defaults, and its metastore: one held for a block (:meth:`PipelineContext.hold`,
what ``with open_pipeline(...)`` does), else one opened per call and shared by the calls it
makes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.metastore import Metastore, MetastoreView, view_of


class PipelineContext:
    """One pipeline, named by its config file (read on first use).

    ``metastore_url`` and ``lake_dir`` (a folder or an object store's URL) are fallbacks for a
    config that names neither (Airflow passes what its ``sluice_metastore`` and ``sluice_lake``
    connections say): the config's own ``metastore.url`` (or ``$SLUICE_METASTORE_URL``) and
    ``lake.warehouse`` (or ``lake.path``) always win. ``host``, by contrast, wins over the
    config's ``collector.host``: the collector worker task of one of ``worker.hosts`` collects
    as that host. ``migrate``: False for readers that must create and change nothing (``sluice
    status``, ``sluice report``): the metastore must then exist at the newest migration, else
    ``MetastoreNotReadyError``; by default every opening migrates it.
    """

    def __init__(
        self,
        config_path: str | Path,
        *,
        metastore_url: str | None = None,
        lake_dir: str | Path | None = None,
        host: str | None = None,
        migrate: bool = True,
    ) -> None:
        self._config_path = Path(config_path)
        self._migrate = migrate
        self._config: PipelineConfig | None = None
        self._default_metastore_url = metastore_url
        self._default_lake = str(lake_dir) if lake_dir is not None else None
        self._host = host
        self._held: Metastore | None = None
        self._holds = 0
        self._lock = threading.Lock()
        """Guards ``_held`` and ``_holds``: an operator's threads may share the context."""

    @property
    def config(self) -> PipelineConfig:
        """The validated config, with the defaults filled in. Raises ConfigError."""
        if self._config is None:
            self._config = self._with_defaults(load_pipeline_config(self._config_path))
        return self._config

    def _with_defaults(self, config: PipelineConfig) -> PipelineConfig:
        update: dict[str, Any] = {}
        if self._default_metastore_url and config.metastore.url is None:
            update["metastore"] = config.metastore.model_copy(
                update={"url": self._default_metastore_url}
            )
        if (
            self._default_lake is not None
            and config.lake.path is None
            and config.lake.warehouse is None
        ):
            update["lake"] = config.lake.model_copy(update={"warehouse": self._default_lake})
        if self._host is not None:
            update["collector"] = config.collector.model_copy(update={"host": self._host})
        return config.model_copy(update=update) if update else config

    def hold(self) -> Metastore:
        """Open the metastore (migrated unless ``migrate`` is False) and use it for every call
        until the matching :meth:`release`; returns it. Holds nest (a block inside a block
        shares the outer one's metastore, closed when the outer one releases it).

        Raises:
            MetastoreError: the metastore cannot be opened (``MetastoreNotReadyError``: it is
                not there, or not migrated, and ``migrate`` is False).
        """
        with self._lock:
            if self._held is None:
                self._held = Metastore.open(
                    self.config.metastore_url,
                    migrate=self._migrate,
                    pooling=self.config.metastore.pooling,
                )
            self._holds += 1
            return self._held

    def release(self) -> None:
        with self._lock:
            if self._holds == 0:
                return
            self._holds -= 1
            held = self._held if self._holds == 0 else None
            if held is not None:
                self._held = None
        if held is not None:
            held.close()

    @contextmanager
    def metastore(self) -> Iterator[Metastore]:
        """The pipeline's metastore, held for the block: the one held already, else one
        opened (and migrated unless ``migrate`` is False) and closed at the block's end; the
        calls inside the block share it."""
        metastore = self.hold()
        try:
            yield metastore
        finally:
            self.release()

    @contextmanager
    def view(self) -> Iterator[MetastoreView]:
        """The pipeline's metastore (:meth:`metastore`) read through a view, in one
        transaction: what ``pipeline_core.state`` reads."""
        with self.metastore() as metastore, view_of(metastore) as view:
            yield view
